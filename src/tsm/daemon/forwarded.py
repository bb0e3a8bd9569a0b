"""A `tsm search` command line the thin client (cli/entry.py) forwarded whole: parsed with
the search grammar the CLI registers (commandline/search.py), answered, and rendered as the
CLI would have printed it, with the same exit codes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..commandline.parser import ArgumentParser, output_format, refuse_undecodable, wants_json
from ..commandline.search import from_arguments, search_parser
from ..core.request import SearchRequest
from ..errors import TsmError
from ..models import SearchResult
from ..render.errors import error_text
from ..render.output import search_output
from ..render.terminal import Terminal

_parser: ArgumentParser | None = None
_parser_lock = threading.Lock()  # argparse does not promise thread safety


def _parse(argv: list[str]) -> Any:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = search_parser()
        return _parser.parse_args(argv)


def answer(
    argv: list[str],
    environ: Mapping[str, str],
    tty: bool,
    search: Callable[[SearchRequest], SearchResult],
    root: str,
    cwd: str,
) -> dict[str, Any] | None:
    """{"stdout", "stderr", "exit"}; None when the full CLI should run it instead (not a
    search, or --help/--version). `cwd` is the client's: its --path folders are read there."""
    if not argv or argv[0] != "search":
        return None
    fmt = "json" if wants_json(argv) else ("human" if tty else "json")
    try:
        args = _parse(argv)
        fmt = output_format(args, tty)
        refuse_undecodable(args)
        result = search(from_arguments(args, environ, cwd, root))
    except TsmError as error:
        return {"stdout": "", "stderr": error_text(error, fmt) + "\n", "exit": error.exit_code}
    except SystemExit:  # --help or --version slipped through: let the full CLI print them
        return None
    # Dressed for the client's terminal, from its forwarded environment (NO_COLOR, COLUMNS …).
    terminal = Terminal.detect(environ, tty, root)
    return {"stdout": search_output(result, fmt, terminal) + "\n", "stderr": "", "exit": 0}
