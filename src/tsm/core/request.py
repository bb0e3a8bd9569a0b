"""A search request, built in one place from whatever an interface received: a command line
(the CLI's own, or one the thin client forwarded to the daemon), MCP tool arguments, or a
request off the daemon's socket. It owns the clock (TSM_NOW) and the `tsm search` grammar,
so a new search flag is declared here once and reaches every interface.

Light on purpose: argparse and the standard library only. The query parser (dates,
validation) runs when the core turns the request into a Query."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import UserError

if TYPE_CHECKING:
    from ..search.query import Query

MAX_TOP_K = 10_000  # search.query.MAX_TOP_K, which this module must not import (it is heavy)
FALLBACKS = ("auto", "error", "fts-only")  # search/query.py says what each does


@dataclass(frozen=True)
class SearchRequest:
    """What was asked, before parsing: the text as typed and the flags as given."""

    text: str
    top_k: int | None = None  # None: the `search.top_k` setting
    mode: str = "hybrid"  # hybrid | fts | vector
    fallback: str = "auto"  # when vectors are unavailable: auto | error | fts-only
    after: str | None = None
    before: str | None = None
    recent: str | None = None
    year: str | None = None
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    include_content: int = 0
    now: dt.datetime = field(default_factory=dt.datetime.now)

    def query(self, default_top_k: int) -> Query:
        """The parsed, validated Query (dates pulled out of the text, flags checked)."""
        from ..search.query import build_query

        return build_query(
            self.text,
            today=self.now.date(),
            top_k=self.top_k if self.top_k is not None else default_top_k,
            mode=self.mode,
            fallback=self.fallback,
            after=self.after,
            before=self.before,
            recent=self.recent,
            year=self.year,
            paths=self.paths,
            tags=self.tags,
            types=self.types,
            categories=self.categories,
            include_content=self.include_content,
        )

    # -- the daemon's wire form -------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        data = asdict(self)
        data["now"] = self.now.isoformat()
        return data

    @classmethod
    def from_wire(cls, data: object) -> SearchRequest:
        """A request off the socket, checked field by field: any local process of the user may
        write to it, so a wrongly typed value is the client's error (exit 1), not a crash."""
        if not isinstance(data, dict):
            raise UserError("the search request must be an object")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name not in known:
                raise UserError(
                    f"unknown search field {name!r}", "known: " + ", ".join(sorted(known))
                )
            values[name] = _checked(name, value)
        if "text" not in values:
            raise UserError("the search request has no text")
        return cls(**values)

    @classmethod
    def for_warm_up(cls, mode: str = "hybrid") -> SearchRequest:
        """A throw-away search that loads the tokenizer's dictionary, the model and the
        vector matrix (`mode` "fts": the keyword side alone), so that a long-lived process
        answers its first real search warm."""
        from ..search.query import WARM_UP_QUERY

        return cls(WARM_UP_QUERY, top_k=1, mode=mode, fallback="fts-only")


_LISTS = ("paths", "tags", "types", "categories")
# The JSON types each scalar field accepts on the wire (bool is never an int here).
_SCALARS: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "mode": (str,),
    "fallback": (str,),
    "top_k": (int, type(None)),
    "include_content": (int,),
    **{name: (str, type(None)) for name in ("after", "before", "recent", "year")},
}


def _checked(name: str, value: object) -> Any:
    if name == "now":
        if not isinstance(value, str):
            raise UserError("'now' must be an ISO date string")
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            raise UserError(f"'now' is not an ISO date: {value[:40]!r}") from None
    if name in _LISTS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UserError(f"search field {name!r} must be a list of strings")
        return tuple(value)
    if isinstance(value, bool) or not isinstance(value, _SCALARS[name]):
        raise UserError(f"search field {name!r} has the wrong type ({type(value).__name__})")
    return value


# -- the clock ---------------------------------------------------------------------------------
def clock(environ: Mapping[str, str] | None = None) -> dt.datetime:
    """Now, or TSM_NOW (ISO date/time) so results are reproducible in tests."""
    fixed = (os.environ if environ is None else environ).get("TSM_NOW")
    if fixed:
        try:
            return dt.datetime.fromisoformat(fixed)
        except ValueError:
            raise UserError(
                f"TSM_NOW={fixed!r} is not an ISO date", "example: 2026-03-18"
            ) from None
    return dt.datetime.now()


def from_tool_arguments(
    query: str, environ: Mapping[str, str] | None = None, **arguments: Any
) -> SearchRequest:
    """A request from an MCP client's tool arguments (named as the fields are)."""
    lists: dict[str, Any] = {k: tuple(arguments.pop(k) or ()) for k in _LISTS if k in arguments}
    return SearchRequest(query, now=clock(environ), **arguments, **lists)


# -- the command line ---------------------------------------------------------------------------
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
    p.add_argument(
        "-k",
        "--top-k",
        type=int_in(1, MAX_TOP_K),
        default=None,
        help="results to return (default 10)",
    )
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--fts-only", action="store_true", help="keyword search only")
    modes.add_argument("--vec-only", action="store_true", help="vector search only")
    p.add_argument(
        "--fallback",
        choices=FALLBACKS,
        default="auto",
        help="when vectors are unavailable (no model, nothing embedded yet): auto and "
        "fts-only return keyword results with a warning (--vec-only still fails), error "
        "fails (exit 2)",
    )
    p.add_argument(
        "--include-content",
        type=int_in(0, MAX_TOP_K),
        default=0,
        metavar="N",
        help="add the whole document text to the top N results",
    )
    p.add_argument("--after", metavar="DATE", help="only documents dated on/after YYYY[-MM[-DD]]")
    p.add_argument("--before", metavar="DATE", help="only documents dated on/before YYYY[-MM[-DD]]")
    p.add_argument("--recent", metavar="SPAN", help="only the last 30d, 2w, 3m …")
    p.add_argument("--year", metavar="YYYY", help="only documents dated in that year")
    p.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="PREFIX",
        help="only documents under this folder (or this file), read from the current folder "
        "(from the index root when that does not lead into it) (repeatable, OR)",
    )
    p.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="only documents with this tag (repeatable, all must match)",
    )
    p.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="TYPE",
        help="markdown, pdf, text or session (repeatable)",
    )
    p.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="NAME",
        help="only this category: a content dir's, else the top folder's (repeatable, OR)",
    )
    return p


def from_arguments(
    args: argparse.Namespace, environ: Mapping[str, str], cwd: str, root: str | os.PathLike[str]
) -> SearchRequest:
    """The request of a parsed `tsm search` command line typed in `cwd`: its --path folders
    become prefixes from the index root (workspace.typed_path), as the request carries them."""
    if args.query is not None and args.query_pos:
        raise UserError("give the query either as an argument or with -q, not both")
    return SearchRequest(
        text=args.query if args.query is not None else " ".join(args.query_pos),
        top_k=args.top_k,
        mode="fts" if args.fts_only else "vector" if args.vec_only else "hybrid",
        fallback=args.fallback,
        after=args.after,
        before=args.before,
        recent=args.recent,
        year=args.year,
        paths=_prefixes(args.path, cwd, root),
        tags=tuple(args.tag),
        types=tuple(args.type),
        categories=tuple(args.category),
        include_content=args.include_content,
        now=clock(environ),
    )


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


def search_parser() -> ArgumentParser:
    """A parser of `tsm search …` command lines alone, with the CLI's exact grammar and
    messages (prog `tsm`), for the daemon answering a forwarded command line."""
    parser = ArgumentParser(prog="tsm")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    add_search_command(sub, format_option())
    return parser


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
    (exit 1) at parse time, not an OverflowError deep inside (issue 14, item 11)."""

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
