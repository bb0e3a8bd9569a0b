"""What every command line has: a parser whose usage errors are user errors, the output
format option, and the checks made before a command runs."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from ..errors import UserError


class ArgumentParser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; the contract says a bad argument is a user error (1)."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.prog}: {message}", f"see `{self.prog} --help`")


def format_option() -> ArgumentParser:
    """`-f/--format`, a parent of every command's parser."""
    parent = ArgumentParser(add_help=False)
    parent.add_argument(
        "-f",
        "--format",
        choices=("json", "human", "text"),
        default=None,
        help="output format (default: human on a terminal, json otherwise)",
    )
    parent.add_argument(
        "--json", dest="format", action="store_const", const="json", help="same as -f json"
    )
    return parent


def output_format(args: argparse.Namespace, tty: bool) -> str:
    chosen = getattr(args, "format", None)
    if chosen is None:
        return "human" if tty else "json"
    return "human" if chosen == "text" else str(chosen)


def wants_json(argv: Sequence[str]) -> bool:
    """Whether a command line asked for JSON, read before parsing (so a parse error is
    reported in the format that was asked for)."""
    for i, arg in enumerate(argv):
        if arg in ("-f", "--format") and i + 1 < len(argv):
            return argv[i + 1] == "json"
        if arg in ("-fjson", "--format=json", "--json"):
            return True
    return False


# Commands whose arguments are file names: a name that is not UTF-8 is theirs to skip with
# a reason (the file system allows it), not a bad argument.
PATH_COMMANDS = frozenset({"index", "ingest-session", "trust", "untrust"})


def refuse_undecodable(args: argparse.Namespace) -> None:
    """An argument that is not valid UTF-8 (Python carries its bytes as lone surrogates) is a
    user error, named once, before it can reach SQLite, JSON or a log as a system error."""
    if args.command in PATH_COMMANDS:
        return
    for name, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and any("\udc80" <= c <= "\udcff" for c in item):
                shown = item.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
                label = "query" if name == "query_pos" else name.replace("_", "-")
                raise UserError(
                    f"the {label} argument is not valid UTF-8: '{shown}'", "pass text in UTF-8"
                )


def int_in(low: int, high: int) -> Any:
    """An argparse `type` for whole numbers in [low, high]: anything else is a usage error
    (exit 1) at parse time, not an OverflowError deep inside."""

    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) <= 30 and text.isascii() else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low} to {high}, got {text!r}"
            )
        return value

    parse.__name__ = "number"  # argparse names the type in its message
    return parse
