"""The `tsm` (and `kb`) entry point: argument parsing, output format, and the one error
boundary that turns TsmError into the contract's exit codes and JSON error object."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from ..errors import SystemFailure, TsmError, UserError
from . import admin, browse, index, mcp_cmd, search, trust_cmd

COMMAND_MODULES = (search, index, browse, admin, trust_cmd, mcp_cmd)


class ArgumentParser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; the contract says a bad argument is a user error (1)."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.prog}: {message}", f"see `{self.prog} --help`")


def format_option() -> argparse.ArgumentParser:
    parent = ArgumentParser(add_help=False)
    parent.add_argument(
        "-f",
        "--format",
        choices=("json", "human", "text"),
        default=None,
        help="output format (default: human on a terminal, json otherwise)",
    )
    return parent


def build_parser() -> ArgumentParser:
    from .. import __version__

    parser = ArgumentParser(
        prog="tsm",
        description="The Space Memory: local hybrid search over your notes.",
        epilog="Exit codes: 0 ok, 1 user error, 2 system error. TSM_DEBUG=1 shows tracebacks.",
    )
    parser.add_argument("--version", action="version", version=f"tsm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    parent = format_option()
    for module in COMMAND_MODULES:
        module.register(sub, parent)
    return parser


def output_format(args: argparse.Namespace, tty: bool | None = None) -> str:
    chosen = getattr(args, "format", None)
    if chosen is None:
        return "human" if (sys.stdout.isatty() if tty is None else tty) else "json"
    return "human" if chosen == "text" else chosen


def main(argv: Sequence[str] | None = None) -> int:
    # A query is one matrix-vector product: memory-bound, and OpenBLAS threads only contend
    # with the embedding engine's own threads (measured in bench/vector_scaling.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    fmt = "json" if _wants_json(argv) else ("human" if sys.stdout.isatty() else "json")
    try:
        _check_working_directory()
        parser = build_parser()
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return 0
        fmt = output_format(args)
        args.output = fmt
        refuse_undecodable(args)
        handler: Any = args.handler
        return int(handler(args) or 0)
    except TsmError as error:
        return _report(error, fmt)
    except KeyboardInterrupt:
        return _report(UserError("interrupted"), fmt)
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except Exception as exc:  # the boundary: never a traceback unless asked
        known = _translated(exc)
        if known is not None:
            return _report(known, fmt)
        if os.environ.get("TSM_DEBUG") == "1":
            raise
        return _report(
            SystemFailure(
                f"unexpected error: {type(exc).__name__}: {exc}",
                "rerun with TSM_DEBUG=1 and report it",
            ),
            fmt,
        )


def _translated(exc: Exception) -> TsmError | None:
    """A disk, permission, lock or corruption error of SQLite or the OS, as one clear line
    naming the index (store/failures.py); None for anything else."""
    if not isinstance(exc, OSError) and "sqlite3" not in sys.modules:
        return None
    from ..store.failures import translate
    from .runtime import load_settings

    try:
        db_path = load_settings().db_path
    except Exception:  # the settings may be what failed; the message then names no file
        db_path = None
    return translate(exc, db_path)


def run_forwarded(
    parse: Callable[[list[str]], argparse.Namespace],
    argv: list[str],
    *,
    environ: Mapping[str, str],
    tty: bool,
    settings: Any,
    render: Callable[[dict[str, Any], Any, str], str],
) -> tuple[str, str, int] | None:
    """Run a `tsm search` command line that the thin client (cli/entry.py) forwarded to the
    daemon: the same parser, checks, output and exit codes as `main`, written to strings
    (stdout, stderr, exit code). None when it is not a search the daemon should answer."""
    fmt = "json" if _wants_json(argv) else ("human" if tty else "json")
    try:
        args = parse(argv)
        if args.command != "search":
            return None
        fmt = args.output = output_format(args, tty)
        refuse_undecodable(args)
        return search.run_forwarded(args, settings, environ, render) + "\n", "", 0
    except TsmError as error:
        return "", error_text(error, fmt) + "\n", error.exit_code
    except SystemExit:  # --help or --version slipped through: let the full CLI print them
        return None


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


def _check_working_directory() -> None:
    try:
        os.getcwd()
    except FileNotFoundError:
        raise UserError(
            "the current directory no longer exists", "cd to an existing directory"
        ) from None


def _wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg in ("-f", "--format") and i + 1 < len(argv):
            return argv[i + 1] == "json"
        if arg in ("-fjson", "--format=json"):
            return True
    return False


def _report(error: TsmError, fmt: str) -> int:
    if os.environ.get("TSM_DEBUG") == "1":
        import traceback

        traceback.print_exc()
    print(error_text(error, fmt), file=sys.stderr)
    return error.exit_code


def error_text(error: TsmError, fmt: str) -> str:
    """The contract's JSON error object, or a human line with the hint."""
    if fmt == "json":
        from ..render.json_format import error_object

        return str(error_object(error))
    from ..render.human_format import one_line

    hint = f"\n  hint: {one_line(error.hint)}" if error.hint else ""
    return f"tsm: error: {one_line(error.message)}{hint}"
