"""`tsm status`, `tsm doctor`."""

from __future__ import annotations

import argparse
from typing import Any

from .runtime import emit, local_backend


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("status", parents=[parent], help="index counts, model and schema")
    p.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    from ..render.human_format import mapping

    status = local_backend().status()
    emit(args, status, mapping(status))
    return 0
