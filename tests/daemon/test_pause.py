"""OnPause: the action runs once a burst of touches has paused, once per burst."""

from __future__ import annotations

import threading
import time

from patience import scaled

from tsm.daemon.pause import OnPause


def test_a_burst_runs_the_action_once_after_it() -> None:
    runs: list[float] = []
    ran = threading.Event()

    def action() -> None:
        runs.append(time.monotonic())
        ran.set()

    pause = OnPause(0.3, action, "test-pause")
    try:
        last = 0.0
        for _ in range(5):
            pause.touch()
            last = time.monotonic()
            time.sleep(0.05)
        assert ran.wait(scaled(10))
        assert runs[0] - last >= 0.3 - 0.01
        ran.clear()
        pause.touch()
        assert ran.wait(scaled(10))
        assert len(runs) == 2
    finally:
        pause.close()


def test_nothing_runs_without_a_touch_or_after_close() -> None:
    runs: list[int] = []
    pause = OnPause(0.05, lambda: runs.append(1), "test-pause")
    time.sleep(0.2)
    pause.touch()
    pause.close()
    time.sleep(0.2)
    assert runs == []
