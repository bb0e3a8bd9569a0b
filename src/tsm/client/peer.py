"""Who is at the other end of a UNIX socket, from the kernel: SO_PEERCRED on Linux,
LOCAL_PEERCRED on macOS and the BSDs. Both ends check it: the daemon serves only its own
user, and a client never sends a query to a daemon another user runs on a shared state dir.
Standard library only: the thin client (cli/entry.py) uses it.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

# struct xucred (sys/ucred.h): u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t[16].
_XUCRED_SIZE = 76
_BSD = sys.platform == "darwin" or sys.platform.startswith(("freebsd", "dragonfly"))


def peer_uid(sock: socket.socket) -> int | None:
    """The peer process's uid; None where the OS offers no way to ask (then the socket's
    0600 mode in a 0700 state dir is the only guard). OSError if the kernel refuses."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is not None:  # struct ucred: pid, uid, gid
        creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if _BSD:
        level = getattr(socket, "SOL_LOCAL", 0)
        creds = sock.getsockopt(level, getattr(socket, "LOCAL_PEERCRED", 1), _XUCRED_SIZE)
        return int(struct.unpack_from("2I", creds)[1])
    return None


def foreign_uid(sock: socket.socket) -> int | None:
    """The peer's uid when it is another user's process, else None (same user, or unknown)."""
    uid = peer_uid(sock)
    return uid if uid is not None and uid != os.getuid() else None
