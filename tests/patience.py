"""How long a test waits before it calls something hung.

A bound in a test only tells a hang from slowness; it must never fail a test because the
machine is busy (the suite runs beside other work, at loads of 10-15 on two cores). So every
bound is scaled by how oversubscribed the cores are when the wait starts."""

from __future__ import annotations

import os


def hang_guard(seconds: float) -> float:
    """`seconds` as meant on an idle machine, stretched by the run-queue per core (1-minute
    load average over the cores), never shortened."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return seconds
    return seconds * max(1.0, load / (os.cpu_count() or 1))
