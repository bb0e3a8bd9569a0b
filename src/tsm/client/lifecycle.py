"""The daemon's lifecycle seen from outside it: start on demand without races, stop, tell
its state, and the instance lock a daemon holds for its whole life (and a rebuild takes so
that no daemon starts on an index being swapped)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from typing import TYPE_CHECKING, Any

from .. import errors, locate
from ..launcher import python
from ..socketpath import in_state_dir
from ..statedir import (
    append_private,
    logs_dir,
    open_private,
    private_dir,
    socket_dir,
    socket_folder_checked,
)
from ..workspace import StatePaths
from .remote import ForeignDaemon, Unavailable, call, connect

if TYPE_CHECKING:
    from ..config import Settings

LOCK_NAME = "tsmd.lock"
AUTOSTART_WAIT = 5.0  # after this, search in-process and let the daemon finish starting


def acquire_lock(state: StatePaths) -> int | None:
    """The instance lock's fd, or None when another daemon holds it."""
    fd = open_private(private_dir(state.root) / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + 2.0  # a client probing the lock holds it for microseconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


class Lifecycle:
    """One state dir's daemon, as a rebuild needs it (core/rebuild.DaemonControl)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def stop(self) -> dict[str, Any]:
        return stop(self.settings)

    def acquire_lock(self) -> int | None:
        return acquire_lock(StatePaths(self.settings.state_dir))

    def state(self) -> dict[str, Any]:
        return daemon_state(self.settings)


def probe(settings: Settings) -> str:
    """ "ours" when a daemon of ours accepts connections on this state dir's socket,
    "foreign" when another user's process holds it, else "none" (a bare connect, not a
    ping: one round trip fewer on every search)."""
    socket_path = StatePaths(settings.state_dir).socket
    if not socket_path.exists():
        return "none"
    try:
        connect(socket_path).close()
        return "ours"
    except ForeignDaemon:
        return "foreign"
    except Unavailable:  # a stale socket: its daemon died
        return "none"


def ensure_started(settings: Settings, wait: float) -> bool:
    """Start a daemon unless one answers; True once it answers within `wait` seconds.
    UnsafePath when the socket's runtime folder is not the user's own (none is started).

    The spawn lock serialises starters (two hooks firing at once start one daemon); the
    daemon's own instance lock (server.py) is the final guard against a second instance.
    """
    paths = StatePaths(settings.state_dir)
    deadline = time.monotonic() + wait
    fd = open_private(private_dir(paths.root) / "tsmd.spawn.lock", os.O_RDWR | os.O_CREAT)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
        if _answers(paths):
            return True
        child = None
        if daemon_state(settings)["state"] not in ("running", "starting"):
            if not in_state_dir(str(paths.socket), str(paths.root)):
                # A runtime folder that is not ours would make the daemon exit at once:
                # say why here rather than start a doomed daemon on every search.
                socket_dir(paths.socket.parent)
            child = spawn(settings)
        while time.monotonic() < deadline:
            if _answers(paths):
                return True
            if child is not None and _exited(child):
                return False  # it could not start (say a corrupt DB): no point waiting
            time.sleep(0.02)
        return False
    finally:
        os.close(fd)  # releases the flock


def _exited(pid: int) -> bool:
    """Whether our child `pid` has exited (and reap it)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def _answers(paths: StatePaths) -> bool:
    return _ping(paths) is not None


def _ping(paths: StatePaths) -> dict[str, Any] | None:
    """The daemon's ping reply (pid, version, its settings' fingerprint), None when none
    answers."""
    try:
        reply = call(paths.socket, "ping", {}, None, 2.0)
    except (Unavailable, errors.TsmError):
        return None
    return reply if isinstance(reply, dict) else {}


def spawn(settings: Settings) -> int:
    """Start `python -m tsm daemon` detached: its own session (a hook's deadline kills the
    hook's process group, not the daemon), no inherited descriptors, output to the log dir."""
    paths = StatePaths(settings.state_dir)
    # The daemon finds the index root as this command did, from its working directory (the
    # root) and the caller's own TSM_INDEX_ROOT if any. An absolute TSM_INDEX_ROOT is the
    # user's word that the root is theirs (trust, README): set here, it made every daemon a
    # search autostarts in a cloned repository apply that repository's tsm.toml in full
    # (sessions.dirs outside the root ingested, embedding.model = openai:<url>).
    env = {
        **os.environ,
        "TSM_STATE_DIR": str(settings.state_dir),
        "TSM_DB_PATH": str(settings.db_path),
    }
    explicit = env.get("TSM_INDEX_ROOT")
    if explicit and not os.path.isabs(locate.expand_home(explicit, env)):
        env["TSM_INDEX_ROOT"] = "."  # relative (so trusting nothing): from the root itself
    with append_private(logs_dir(paths.root) / "tsmd.stderr.log") as err:
        proc = subprocess.Popen(
            python("-m", "tsm", "daemon"),
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            close_fds=True,
            start_new_session=True,
            env=env,
            cwd=str(settings.index_root) if settings.index_root.is_dir() else "/",
        )
    return proc.pid


def _lock_held(paths: StatePaths) -> bool:
    """Whether a live daemon holds the instance lock (kept for its whole life)."""
    lock = paths.root / LOCK_NAME
    if not lock.exists():
        return False
    try:
        fd = open_private(lock, os.O_RDWR)
    except (OSError, errors.UnsafePath):
        return False  # not a lock a daemon of ours could hold
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _read_pid(paths: StatePaths) -> int | None:
    """The PID file's number. Only the regular file itself, and its first bytes: a cloned
    repository's `.tsm/tsmd.pid -> /dev/zero` made status, stop and every autostarting search
    read until MemoryError, and a link to a FIFO made them wait for ever."""
    from ..errors import UnsafePath
    from ..statedir import read_state_file

    try:
        data = read_state_file(paths.pid, cap=64)
        return None if data is None else int(data.decode("ascii").strip())
    except (OSError, ValueError, UnsafePath):
        return None


def daemon_state(settings: Settings) -> dict[str, Any]:
    """running | starting | unresponsive | stale | stopped, with the pid when known."""
    paths = StatePaths(settings.state_dir)
    pid = _read_pid(paths)
    base = {"pid": pid, "socket": str(paths.socket)}
    if paths.socket.exists():
        try:
            connect(paths.socket).close()
        except ForeignDaemon as exc:
            return base | {"state": "foreign", "warning": str(exc)}
        except Unavailable:
            pass
        reply = _ping(paths)
        if reply is not None:
            # A daemon started with another environment (TSM_STORE_URL, a model, a tsm.toml
            # since changed) serves none of this command's work: say so rather than "running".
            from .fingerprint import settings_fingerprint

            if reply.get("config") not in (None, settings_fingerprint(settings)):
                return base | {"state": "running", "other_settings": True}
            return base | {"state": "running"}
    if _lock_held(paths):
        return base | {"state": "starting" if not paths.socket.exists() else "unresponsive"}
    if pid is not None or paths.socket.exists():
        return base | {"state": "stale"}
    return base | {"state": "stopped"}


def stop(settings: Settings, timeout: float = 15.0) -> dict[str, Any]:
    """Ask the daemon to exit; SIGTERM, then SIGKILL, if it does not within `timeout`."""
    paths = StatePaths(settings.state_dir)
    before = daemon_state(settings)
    if before["state"] == "foreign":  # not ours to stop, and its pid file not ours to trust
        return {"stopped": False, "was": "foreign", "pid": None}
    if before["state"] in ("stopped", "stale"):
        if before["state"] == "stale":
            try:
                socket_folder_checked(paths.socket, paths.root)
                paths.socket.unlink(missing_ok=True)
            except errors.UnsafePath:
                pass  # not ours to clean: `tsm start` says why
            paths.pid.unlink(missing_ok=True)
        return {"stopped": False, "was": before["state"], "pid": before["pid"]}
    pid = before["pid"]
    try:
        call(paths.socket, "shutdown", {}, None, 5.0)
    except (Unavailable, errors.TsmError):
        if pid:
            _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _lock_held(paths):
        if time.monotonic() > deadline:
            if pid:
                _signal(pid, signal.SIGKILL)
            time.sleep(0.2)
            break
        time.sleep(0.05)
    return {"stopped": True, "was": before["state"], "pid": pid}


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
