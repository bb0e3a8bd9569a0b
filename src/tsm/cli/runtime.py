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
    """Write `data` as JSON or `human` as text to stdout; human text with its control
    characters made visible (render/human_format.visible), whatever the command."""
    if args.output == "json":
        from ..render.json_format import dumps

        print(dumps(data))
    else:
        from ..render.human_format import visible

        print(visible(human))


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
            bar = bars[key] = tqdm(
                total=total,
                unit="chunk" if key == "embedding" else "file",
                desc=key,
                leave=False,
                file=sys.stderr,
            )
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return update


def int_in(low: int, high: int) -> Any:
    """An argparse `type` for whole numbers in [low, high]: anything else is a usage error
    (exit 1) at parse time, not an OverflowError deep inside (issue 14, item 11)."""

    def parse(text: str) -> int:
        try:
            value = int(text) if len(text) <= 30 and text.isascii() else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low} to {high}, got {text!r}"
            )
        return value

    parse.__name__ = "number"  # argparse names the type in its message
    return parse
