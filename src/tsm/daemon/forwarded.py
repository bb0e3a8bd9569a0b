"""A `tsm search` or `tsm context` command line the thin client (cli/entry.py) forwarded
whole: parsed with the core's grammar (core/request.py, core/context_command.py, the same the
CLI registers), answered, and rendered as the CLI would have printed it, with the same exit
codes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..core import request as search_request
from ..core.context import ContextRequest, Injection
from ..core.context_command import add_context_command, context_request
from ..errors import TsmError
from ..models import SearchResult
from ..render.context_format import context_output
from ..render.errors import error_text
from ..render.output import search_output
from ..render.terminal import Terminal

COMMANDS = ("search", "context")
_parser: search_request.ArgumentParser | None = None
_parser_lock = threading.Lock()  # argparse does not promise thread safety


def _parse(argv: list[str]) -> Any:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = search_request.ArgumentParser(prog="tsm")
            sub = _parser.add_subparsers(
                dest="command", metavar="COMMAND", parser_class=search_request.ArgumentParser
            )
            parent = search_request.format_option()
            search_request.add_search_command(sub, parent)
            add_context_command(sub, parent)
        return _parser.parse_args(argv)


def answer(
    argv: list[str],
    environ: Mapping[str, str],
    tty: bool,
    search: Callable[[search_request.SearchRequest], SearchResult],
    root: str,
    cwd: str,
    context: Callable[[ContextRequest], Injection] | None = None,
    stdin: bytes | None = None,
) -> dict[str, Any] | None:
    """{"stdout", "stderr", "exit"}; None when the full CLI should run it instead (another
    command, or --help/--version). `cwd` is the client's: its --path folders are read there;
    `stdin`: what the client read from its stdin for `tsm context`."""
    if not argv or argv[0] not in COMMANDS or (argv[0] == "context" and context is None):
        return None
    fmt = "json" if search_request.wants_json(argv) else ("human" if tty else "json")
    try:
        args = _parse(argv)
        fmt = search_request.output_format(args, tty)
        search_request.refuse_undecodable(args)
        if args.command == "context" and context is not None:
            injection = context(context_request(args, stdin, environ))
            return {"stdout": context_output(injection, args.explain, fmt), "stderr": "", "exit": 0}
        result = search(search_request.from_arguments(args, environ, cwd, root))
    except TsmError as error:
        return {"stdout": "", "stderr": error_text(error, fmt) + "\n", "exit": error.exit_code}
    except SystemExit:  # --help or --version slipped through: let the full CLI print them
        return None
    # Dressed for the client's terminal, from its forwarded environment (NO_COLOR, COLUMNS …).
    terminal = Terminal.detect(environ, tty, root)
    return {"stdout": search_output(result, fmt, terminal) + "\n", "stderr": "", "exit": 0}
