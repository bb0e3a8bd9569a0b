"""What every command needs at run time: settings, the core (through the daemon when one
runs), output and progress."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..client.connect import Client
    from ..config import Settings


def load_settings() -> Settings:
    from ..config import load

    return load()


def knowledge(settings: Settings | None = None, *, searching: bool = False) -> Client:
    """The core's operations: answered by the daemon when one runs (a search starts one:
    client/connect.py), in-process otherwise."""
    from ..client.connect import connect

    return connect(settings or load_settings(), searching=searching)


def emit(args: argparse.Namespace, data: Any, human: str) -> None:
    """Write `data` as JSON or `human` as text to stdout (render/output.py)."""
    from ..render.output import rendered

    print(rendered(data, human, args.output))


def progress_bar(args: argparse.Namespace) -> Any:
    """A progress callback drawing a bar on a terminal; None in JSON mode or when piped."""
    if args.output == "json" or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    # tqdm's monitor thread only nudges bars that stall; without it the run keeps one
    # thread, so its index workers can be forked (indexing_pool.start_method).
    tqdm.monitor_interval = 0
    bars: dict[str, Any] = {}

    def update(done: int, total: int, label: str) -> None:
        if total == 0:  # a wait of unknown length: a line, not a bar
            print(f"tsm: {label}", file=sys.stderr)
            return
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
