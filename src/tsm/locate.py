"""Where an index lives, from the environment and the working directory alone. Only `os`, so
the thin client (cli/entry.py) can find the daemon's socket without loading the config."""

from __future__ import annotations

import os
from collections.abc import Mapping

CONFIG_FILE = "tsm.toml"
SOCKET_NAME = "tsmd.sock"


def index_root(cwd: str, environ: Mapping[str, str]) -> str:
    """TSM_INDEX_ROOT, else the nearest directory at or above `cwd` holding tsm.toml, else cwd."""
    if environ.get("TSM_INDEX_ROOT"):
        return os.path.realpath(os.path.expanduser(environ["TSM_INDEX_ROOT"]))
    folder = os.path.realpath(cwd)
    while True:
        if os.path.isfile(os.path.join(folder, CONFIG_FILE)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.realpath(cwd)
        folder = parent


def state_dir(root: str, environ: Mapping[str, str]) -> str:
    """TSM_STATE_DIR, else <index root>/.tsm."""
    return os.path.expanduser(environ.get("TSM_STATE_DIR") or os.path.join(root, ".tsm"))
