"""The thin client: connect to the daemon, send one request, map its reply back to results
or TsmErrors; start the daemon on demand without races. Standard library only, so that
`tsm search` through the daemon stays light (tests/test_imports.py checks it).

Any trouble reaching the daemon raises `Unavailable`, which callers answer by running the
operation in-process: a daemon that is down, starting, or configured differently never
makes the user's command fail.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..statedir import append_private, logs_dir, open_private, private_dir
from ..workspace import StatePaths
from . import protocol
from .peer import foreign_uid

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import SearchResult

CONNECT_TIMEOUT = 2.0
SEARCH_TIMEOUT = 60.0  # includes a cold model load in a just-started daemon
WRITE_TIMEOUT = 24 * 3600.0  # a first index of a large vault, embedding excluded
AUTOSTART_WAIT = 5.0  # after this, search in-process and let the daemon finish starting
_FALLBACK_KINDS = {"config_mismatch", "bad_version"}


class Unavailable(Exception):
    """The daemon cannot serve this request; run it in-process instead."""


class ForeignDaemon(Unavailable):
    """The process on the socket runs as another user: never send it anything."""


def connect(path: Path, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
    """A connection to the daemon, once the kernel says it runs as this user."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        uid = foreign_uid(sock)
    except OSError as exc:
        sock.close()
        raise Unavailable(f"cannot connect to {path}: {exc}") from None
    if uid is not None:
        sock.close()
        raise ForeignDaemon(
            f"the daemon on {path} runs as uid {uid}, not as you "
            f"(uid {os.getuid()}); tsm ignores it and works in-process"
        )
    return sock


def call(path: Path, op: str, args: dict[str, Any], config: str | None, timeout: float) -> Any:
    """One request/reply. TsmErrors from the daemon are re-raised as themselves."""
    sock = connect(path)
    try:
        protocol.send(sock, protocol.request(op, args, config), timeout=CONNECT_TIMEOUT + 5)
        reply = protocol.receive(sock, protocol.MAX_REPLY_BYTES, timeout)
    except (OSError, TimeoutError, protocol.ConnectionClosed, protocol.ProtocolError) as exc:
        raise Unavailable(f"daemon at {path} did not answer: {type(exc).__name__}: {exc}") from None
    finally:
        sock.close()
    if reply.get("ok"):
        return reply.get("result")
    error = reply.get("error") or {}
    if error.get("kind") in _FALLBACK_KINDS:
        raise Unavailable(error.get("message", "daemon refused the request"))
    raise _as_tsm_error(error)


def _as_tsm_error(error: dict[str, Any]) -> errors.TsmError:
    cls = getattr(errors, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.TsmError)):
        cls = errors.UserError if error.get("exit_code") == 1 else errors.SystemFailure
    return cls(str(error.get("message", "daemon error")), error.get("hint"))


class DaemonBackend:
    """The operations of LocalBackend, answered by the daemon over its socket."""

    def __init__(self, settings: Settings) -> None:
        from .codec import settings_fingerprint

        self.settings = settings
        self.paths = StatePaths(settings.state_dir)
        self.config = settings_fingerprint(settings)

    def _call(self, op: str, args: dict[str, Any], timeout: float = WRITE_TIMEOUT) -> Any:
        return call(self.paths.socket, op, args, self.config, timeout)

    def ping(self) -> dict[str, Any]:
        result: dict[str, Any] = call(self.paths.socket, "ping", {}, None, CONNECT_TIMEOUT + 3)
        return result

    def search(self, flags: dict[str, Any], now: Any = None) -> SearchResult:
        """Search with build_query's keyword arguments (`text`, `top_k`, `mode` …)."""
        from .codec import search_result_from_dict

        data = self._call(
            "search", {"flags": flags, "now": now.isoformat() if now else None}, SEARCH_TIMEOUT
        )
        return search_result_from_dict(data["result"])

    def search_rendered(self, flags: dict[str, Any], now: Any, render: str) -> str:
        """The finished output (`render` = json | human) rendered by the daemon, so the CLI
        imports neither the query parser nor the renderers."""
        data = self._call(
            "search",
            {"flags": flags, "now": now.isoformat() if now else None, "render": render},
            SEARCH_TIMEOUT,
        )
        return str(data["rendered"])

    def index(self, paths: list[Path], no_embed: bool = False) -> dict[str, Any]:
        absolute = [os.path.abspath(os.path.expanduser(p)) for p in paths]
        result: dict[str, Any] = self._call("index", {"paths": absolute, "no_embed": no_embed})
        return result

    def ingest_session(self, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "ingest_session", {"path": os.path.abspath(os.path.expanduser(path))}
        )
        return result

    def reindex(self, target: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("reindex", {"target": target})
        return result

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("status", {}, SEARCH_TIMEOUT)
        return result

    def doctor(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("doctor", {}, SEARCH_TIMEOUT * 5)
        return result


def running_backend(settings: Settings, autostart: bool = False) -> DaemonBackend | None:
    """A DaemonBackend if a daemon for this state dir accepts connections (starting one first
    when `autostart`), else None. Never raises. A bare connect, not a ping: one round trip
    fewer on every search."""
    backend = DaemonBackend(settings)
    if backend.paths.socket.exists():
        try:
            connect(backend.paths.socket).close()
            return backend
        except ForeignDaemon:
            return None  # another user's: neither use it nor start ours beside it
        except Unavailable:
            pass  # a stale socket: its daemon died
    if not autostart:
        return None
    try:
        return backend if ensure_started(settings, AUTOSTART_WAIT) else None
    except OSError:
        return None


def ensure_started(settings: Settings, wait: float) -> bool:
    """Start a daemon unless one answers; True once it answers within `wait` seconds.

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
    try:
        call(paths.socket, "ping", {}, None, 2.0)
        return True
    except (Unavailable, errors.TsmError):
        return False


def spawn(settings: Settings) -> int:
    """Start `python -m tsm daemon` detached: its own session (a hook's deadline kills the
    hook's process group, not the daemon), no inherited descriptors, output to the log dir."""
    paths = StatePaths(settings.state_dir)
    env = {
        **os.environ,
        "TSM_INDEX_ROOT": str(settings.index_root),
        "TSM_STATE_DIR": str(settings.state_dir),
        "TSM_DB_PATH": str(settings.db_path),
    }
    with append_private(logs_dir(paths.root) / "tsmd.stderr.log") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tsm", "daemon"],
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
    lock = paths.root / "tsmd.lock"
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
    try:
        return int(paths.pid.read_text().strip())
    except (OSError, ValueError):
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
        if _answers(paths):
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
            for path in (paths.socket, paths.pid):
                path.unlink(missing_ok=True)
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
