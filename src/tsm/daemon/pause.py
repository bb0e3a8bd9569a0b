"""An action run once activity pauses: `touch()` after each piece of work, and the action
runs on a thread of its own when no touch has come for `seconds`; a burst of work runs it
once, after the burst."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("tsm.daemon")


class OnPause:
    def __init__(self, seconds: float, action: Callable[[], object], name: str) -> None:
        self.seconds = seconds
        self._action = action
        self._last = 0.0
        self._touched = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def touch(self) -> None:
        self._last = time.monotonic()
        self._touched.set()

    def close(self) -> None:
        self._closing.set()
        self._touched.set()
        self._thread.join(5)

    def _run(self) -> None:
        while True:
            self._touched.wait()
            if self._closing.is_set():
                return
            while True:
                self._touched.clear()  # a touch after this runs the action once more
                left = self._last + self.seconds - time.monotonic()
                if left <= 0:
                    break
                if self._closing.wait(left):
                    return
            try:
                self._action()
            except Exception:  # an optimisation only: never the daemon's end
                log.warning("%s failed", self._thread.name, exc_info=True)
