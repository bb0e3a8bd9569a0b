"""`tsm search`: its grammar is the core's (core/request.py), shared with the daemon that
answers forwarded command lines (cli/entry.py)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..core.request import add_search_command, from_arguments
from .runtime import knowledge, load_settings


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    add_search_command(sub, parent).set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    request = from_arguments(args, os.environ)
    settings = load_settings()
    # Through the daemon when it runs, started on demand when the index exists.
    autostart = bool(settings.get("daemon.autostart")) and settings.db_path.exists()
    result = knowledge(settings, autostart=autostart).search(request)
    from ..render.output import search_output

    print(search_output(result, args.output))
    return 0
