"""A folder swapped back and forth for a link elsewhere while a test runs tsm beside it: the
race a checkout (or any process) can start between tsm finding a file and opening it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOLD_S = 0.02  # each state is held this long, so that both a walk and a read can meet it


@contextmanager
def link_swapped(folder: Path, elsewhere: Path) -> Iterator[None]:
    """While the block runs, `folder` is in turn itself and a symlink to `elsewhere`."""
    away = folder.with_name(folder.name + ".real")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            folder.rename(away)
            folder.symlink_to(elsewhere)
            time.sleep(HOLD_S)
            folder.unlink()
            away.rename(folder)
            time.sleep(HOLD_S)

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        yield
    finally:
        stop.set()
        swapper.join()
