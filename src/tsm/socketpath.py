"""Where the daemon's socket lives: `<state dir>/tsmd.sock` when that path fits a UNIX socket
address, else a socket named by a hash of the state dir in the user's own runtime folder
($XDG_RUNTIME_DIR/tsm, or /tmp/tsm-<uid>), which the daemon creates 0700 and checks
(statedir.socket_dir). Only `os`, so the thin client (cli/entry.py) finds it cheaply.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

SOCKET_NAME = "tsmd.sock"
# sun_path holds 108 bytes on Linux and 104 on macOS and the BSDs, its NUL included; a
# longer path fails to bind ("AF_UNIX path too long").
MAX_SOCKET_PATH = 100


def socket_path(state_dir: str, environ: Mapping[str, str]) -> str:
    """The daemon's socket for this state dir."""
    own = os.path.join(state_dir, SOCKET_NAME)
    if _fits(own):
        return own
    import hashlib

    name = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:32] + ".sock"
    xdg = environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg):
        beside = os.path.join(xdg, "tsm", name)
        if _fits(beside):
            return beside
    return os.path.join(f"/tmp/tsm-{os.getuid()}", name)


def in_state_dir(path: str, state_dir: str) -> bool:
    """Whether the socket is the state dir's own (not in the runtime folder)."""
    return os.path.dirname(path) == state_dir


def _fits(path: str) -> bool:
    return len(os.fsencode(path)) <= MAX_SOCKET_PATH
