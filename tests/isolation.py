"""The environment a tsm process started by a test runs in: none of the developer's TSM_*
settings or user config, no daemon started behind the test's back, and a fixed "now" so
dates and recency never rot with the calendar."""

from __future__ import annotations

import os
from pathlib import Path

FIXED_NOW = "2026-03-20T12:00:00"


def isolated_environ(base: Path) -> dict[str, str]:
    """os.environ without TSM_*, plus the test settings; XDG_CONFIG_HOME under `base`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TSM_")}
    return env | {
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
        "TSM_NOW": FIXED_NOW,
        "XDG_CONFIG_HOME": str(base / "xdg"),
    }
