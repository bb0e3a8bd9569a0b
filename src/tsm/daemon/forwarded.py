"""A `tsm search` command line the thin client (cli/entry.py) forwarded whole: parsed with
the core's search grammar (core/request.py, the same the CLI registers), answered, and
rendered as the CLI would have printed it, with the same exit codes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..core import request as search_request
from ..errors import TsmError
from ..models import SearchResult
from ..render.errors import error_text
from ..render.output import search_output
from ..render.terminal import Terminal

_parser: search_request.ArgumentParser | None = None
_parser_lock = threading.Lock()  # argparse does not promise thread safety


def _parse(argv: list[str]) -> Any:
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = search_request.search_parser()
        return _parser.parse_args(argv)


def answer(
    argv: list[str],
    environ: Mapping[str, str],
    tty: bool,
    search: Callable[[search_request.SearchRequest], SearchResult],
    root: str,
    cwd: str,
) -> dict[str, Any] | None:
    """{"stdout", "stderr", "exit"}; None when the full CLI should run it instead (not a
    search, or --help/--version). `cwd` is the client's: its --path folders are read there."""
    if not argv or argv[0] != "search":
        return None
    fmt = "json" if search_request.wants_json(argv) else ("human" if tty else "json")
    try:
        args = _parse(argv)
        fmt = search_request.output_format(args, tty)
        search_request.refuse_undecodable(args)
        result = search(search_request.from_arguments(args, environ, cwd, root))
    except TsmError as error:
        return {"stdout": "", "stderr": error_text(error, fmt) + "\n", "exit": error.exit_code}
    except SystemExit:  # --help or --version slipped through: let the full CLI print them
        return None
    # Dressed for the client's terminal, from its forwarded environment (NO_COLOR, COLUMNS …).
    terminal = Terminal.detect(environ, tty, root)
    return {"stdout": search_output(result, fmt, terminal) + "\n", "stderr": "", "exit": 0}
