"""A `tsm search` or `tsm context` command line the thin client (cli/entry.py) forwarded
whole: parsed with the grammar the CLI registers (commandline/), answered, and rendered as
the CLI would have printed it, with the same exit codes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..client.fingerprint import settings_fingerprint
from ..commandline.context import context_request
from ..commandline.parser import ArgumentParser, output_format, refuse_undecodable, wants_json
from ..commandline.search import forwardable_parser, from_arguments
from ..config import load
from ..core.context import ContextRequest, Injection
from ..core.request import SearchRequest
from ..errors import TsmError
from ..models import SearchResult
from ..render.context_format import context_output
from ..render.errors import error_text
from ..render.output import search_output
from ..render.terminal import Terminal
from .arguments import CommandLine

COMMANDS = ("search", "context")
_parser: ArgumentParser | None = None
_parser_lock = threading.Lock()  # argparse does not promise thread safety


def _parse(argv: list[str]) -> Any:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = forwardable_parser()
        return _parser.parse_args(argv)


def answer_line(
    line: CommandLine,
    same_settings: Callable[[str], bool],
    search: Callable[[SearchRequest], SearchResult],
    context: Callable[[ContextRequest], Injection],
) -> dict[str, Any] | None:
    """The answer to a forwarded command line; None (the client then runs the full CLI)
    when the client's environment or tsm.toml gives other settings than the daemon's."""
    try:
        settings = load(Path(line.cwd), line.environ)
    except TsmError:
        return None  # the full CLI reports the config error itself
    if not same_settings(settings_fingerprint(settings)):
        return None
    return answer(line, str(settings.index_root), search, context)


def answer(
    line: CommandLine,
    root: str,
    search: Callable[[SearchRequest], SearchResult],
    context: Callable[[ContextRequest], Injection] | None = None,
) -> dict[str, Any] | None:
    """{"stdout", "stderr", "exit"}; None when the full CLI should run it instead (another
    command, or --help/--version). The client's folder (`line.cwd`) is where its --path
    folders are read; `line.stdin` is what it read from its stdin for `tsm context`."""
    argv, environ, tty = line.argv, line.environ, line.tty
    if not argv or argv[0] not in COMMANDS or (argv[0] == "context" and context is None):
        return None
    fmt = "json" if wants_json(argv) else ("human" if tty else "json")
    try:
        args = _parse(argv)
        fmt = output_format(args, tty)
        refuse_undecodable(args)
        if args.command == "context" and context is not None:
            injection = context(context_request(args, line.stdin, environ))
            return {"stdout": context_output(injection, args.explain, fmt), "stderr": "", "exit": 0}
        result = search(from_arguments(args, environ, line.cwd, root))
    except TsmError as error:
        return {"stdout": "", "stderr": error_text(error, fmt) + "\n", "exit": error.exit_code}
    except SystemExit:  # --help or --version slipped through: let the full CLI print them
        return None
    # Dressed for the client's terminal, from its forwarded environment (NO_COLOR, COLUMNS …).
    terminal = Terminal.detect(environ, tty, root)
    return {"stdout": search_output(result, fmt, terminal) + "\n", "stderr": "", "exit": 0}
