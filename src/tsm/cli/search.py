"""`tsm search`: its grammar (commandline/search.py, generated from the request's
declaration) is shared with the daemon that answers forwarded command lines (cli/entry.py)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..commandline.parser import int_in
from ..commandline.search import add_search_command, from_arguments
from ..models import MAX_TOP_K
from .runtime import knowledge, load_settings


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = add_search_command(sub, parent)
    # Here, not in the shared grammar: it needs this terminal, so the thin client never
    # forwards a command line holding it (cli/entry.py).
    p.add_argument(
        "--open",
        nargs="?",
        const=1,
        type=int_in(1, MAX_TOP_K),
        metavar="N",
        help="open result N (default 1) in $VISUAL or $EDITOR, at its line",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    request = from_arguments(args, os.environ, os.getcwd(), settings.index_root)
    result = knowledge(settings, searching=True).search(request)
    from ..render.output import search_output
    from ..render.terminal import Terminal

    terminal = Terminal.detect(root=settings.index_root)
    print(search_output(result, args.output, terminal), flush=True)
    if args.open is not None:
        from .open_cmd import open_result

        return open_result(result, args.open, settings.index_root)
    return 0
