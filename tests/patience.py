"""How long a test may wait for a process on this machine: a bound set for a quiet machine,
stretched by the load per core. Tests wait on events (a reply, a status, a file); the bound
only says when to give up, so a loaded machine fails nothing a quiet one passes."""

from __future__ import annotations

import os


def patience() -> float:
    """The load per core right now (the 1-minute average), at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def scaled(seconds: float) -> float:
    """`seconds` of a quiet machine, on this one now."""
    return seconds * patience()
