"""The `tsm` (and `kb`) entry point: argument parsing, output format, and the one error
boundary that turns TsmError into the contract's exit codes and JSON error object."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ..commandline.parser import (
    ArgumentParser,
    format_option,
    output_format,
    refuse_undecodable,
    wants_json,
)
from ..errors import SystemFailure, TsmError, UserError
from ..render.errors import error_text
from . import admin, browse, completion, context, index, mcp_cmd, search, transfer, trust_cmd

COMMAND_MODULES = (
    search,
    context,
    index,
    browse,
    admin,
    transfer,
    trust_cmd,
    mcp_cmd,
    completion,
)


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


def main(argv: Sequence[str] | None = None) -> int:
    # A query is one matrix-vector product: memory-bound, and OpenBLAS threads only contend
    # with the embedding engine's own threads (measured in bench/vector_scaling.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    fmt = "json" if wants_json(argv) else ("human" if sys.stdout.isatty() else "json")
    try:
        _check_working_directory()
        parser = build_parser()
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return 0
        fmt = output_format(args, sys.stdout.isatty())
        args.output = fmt
        refuse_undecodable(args)
        args.parser = parser  # the whole grammar (`tsm completion` prints it for a shell)
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
    """A disk, permission, lock or corruption error of SQLite or the OS, or a PostgreSQL
    server's failure, as one clear line naming the index (store/failures.py); None for
    anything else."""
    if not isinstance(exc, OSError) and not {"sqlite3", "psycopg"} & set(sys.modules):
        return None
    from ..core.failures import translate
    from .runtime import load_settings

    try:
        store_key: str | None = load_settings().store_key
    except Exception:  # the settings may be what failed; the message then names no file
        store_key = None
    return translate(exc, store_key)


def _check_working_directory() -> None:
    try:
        os.getcwd()
    except FileNotFoundError:
        raise UserError(
            "the current directory no longer exists", "cd to an existing directory"
        ) from None


def _report(error: TsmError, fmt: str) -> int:
    if os.environ.get("TSM_DEBUG") == "1":
        import traceback

        traceback.print_exc()
    print(error_text(error, fmt), file=sys.stderr)
    return error.exit_code
