"""What every command needs at run time: settings, the backend, output and progress."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def load_settings() -> Any:
    from ..config import load

    return load()


def local_backend() -> Any:
    from ..backend import LocalBackend

    return LocalBackend(load_settings())


def daemon_backend(settings: Any, autostart: bool = False) -> Any:
    """The running daemon's DaemonBackend (started first when `autostart`), or None, in which
    case the caller runs the operation in-process."""
    from ..daemon.client import running_backend

    return running_backend(settings, autostart)


def emit(args: argparse.Namespace, data: Any, human: str) -> None:
    """Write `data` as JSON or `human` as text to stdout."""
    if args.output == "json":
        from ..render.json_format import dumps

        print(dumps(data))
    else:
        print(human)


def progress_bar(args: argparse.Namespace) -> Any:
    """A progress callback drawing a bar on a terminal; None in JSON mode or when piped."""
    if args.output == "json" or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(done: int, total: int, label: str) -> None:
        key = "embedding" if label == "embedding" else "files"
        bar = bars.get(key)
        if bar is None:
            bar = bars[key] = tqdm(total=total, unit="chunk" if key == "embedding" else "file",
                                   desc=key, leave=False, file=sys.stderr)
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return update
