"""The `tsm search` grammar, generated from the request's declaration (core/request.py): one
flag per field, with the field's help, values and bounds; and the request a parsed command
line asks for."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import Field
from typing import Any

from ..core.request import Option, SearchRequest, clock, declared_options, is_list
from ..errors import UserError
from .parser import ArgumentParser, format_option, int_in


def add_search_command(sub: Any, parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The `search` subcommand and its flags, on a subparsers object."""
    p: argparse.ArgumentParser = sub.add_parser(
        "search",
        parents=[parent],
        help="hybrid search over the index",
        description="Search the index (hybrid FTS5 BM25 + vectors, fused by RRF).",
    )
    p.add_argument("query_pos", nargs="*", metavar="QUERY", help="the query")
    p.add_argument("-q", "--query", help="the query (instead of the positional argument)")
    for declared, option in declared_options():
        if option.switches:
            group = p.add_mutually_exclusive_group()
            for flag, value, text in option.switches:
                group.add_argument(
                    flag, dest=declared.name, action="store_const", const=value, help=text
                )
            p.set_defaults(**{declared.name: declared.default})
        elif option.flags:
            p.add_argument(*option.flags, **_flag(declared, option))
    return p


def _flag(declared: Field[Any], option: Option) -> dict[str, Any]:
    """add_argument's keywords for one declared field."""
    keywords: dict[str, Any] = {"help": option.help, "metavar": option.metavar}
    if is_list(declared):
        keywords.update(action="append", default=[])
    else:
        keywords["default"] = declared.default
    if option.bounds is not None:
        keywords["type"] = int_in(*option.bounds)
    if option.values and not option.any_case:  # any case: the query builder folds and checks
        keywords["choices"] = option.values
    return keywords


def _dest(declared: Field[Any], option: Option) -> str:
    """Where argparse keeps the field's value: under the switches' field, else the flag's
    name (so errors and completion name it as the user typed it)."""
    if option.switches:
        return declared.name
    return option.label.lstrip("-").replace("-", "_")


def from_arguments(
    args: argparse.Namespace, environ: Mapping[str, str], cwd: str, root: str | os.PathLike[str]
) -> SearchRequest:
    """The request of a parsed `tsm search` command line typed in `cwd`: its --path folders
    become prefixes from the index root (workspace.typed_path), as the request carries them."""
    if args.query is not None and args.query_pos:
        raise UserError("give the query either as an argument or with -q, not both")
    given: dict[str, Any] = {}
    for declared, option in declared_options():
        if option.flags or option.switches:
            value = getattr(args, _dest(declared, option))
            given[declared.name] = tuple(value) if is_list(declared) else value
    given["paths"] = _prefixes(given["paths"], cwd, root)
    text = args.query if args.query is not None else " ".join(args.query_pos)
    return SearchRequest(text=text, now=clock(environ), **given)


def _prefixes(typed: Sequence[str], cwd: str, root: str | os.PathLike[str]) -> tuple[str, ...]:
    """Each --path from the index root; the root itself (`--path .` there) filters nothing."""
    from ..workspace import typed_path

    prefixes = []
    for text in typed:
        if not text.strip():
            raise UserError("--path is empty", "example: --path notes/")
        try:
            prefix = typed_path(text.strip(), cwd, root)
        except ValueError as exc:
            raise UserError(f"--path {exc}", "paths are read from the current folder") from None
        if not prefix:
            return ()  # the whole index: with OR, no other prefix narrows it
        prefixes.append(prefix)
    return tuple(prefixes)


def forwardable_parser() -> ArgumentParser:
    """A parser of the command lines the thin client forwards to the daemon (`tsm search`,
    `tsm context`) alone, with the CLI's exact grammar and messages (prog `tsm`)."""
    from .context import add_context_command

    parser = ArgumentParser(prog="tsm")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    parent = format_option()
    add_search_command(sub, parent)
    add_context_command(sub, parent)
    return parser
