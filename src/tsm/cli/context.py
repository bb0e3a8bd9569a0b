"""`tsm context`: what the prompt hook injects for a prompt (core/context.py). Its grammar is
shared with the daemon that answers forwarded command lines (cli/entry.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..commandline.context import MAX_INPUT_BYTES, add_context_command, context_request
from .runtime import knowledge, load_settings


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    add_context_command(sub, parent).set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    stdin = None
    if args.prompt is None and not sys.stdin.isatty():
        stdin = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    request = context_request(args, stdin, os.environ)
    settings = load_settings()
    injection = knowledge(settings, searching=True).context(request)
    from ..render.context_format import context_output

    sys.stdout.write(context_output(injection, args.explain, args.output))
    sys.stdout.flush()
    return 0
