"""The resident daemon (`python -m tsm daemon`): a UNIX socket (0600, same-uid peers only) in
the state dir, a PID file, a rotating log, and requests answered by a bounded pool of threads
(daemon/connections.py) dispatching to the operations in daemon/handlers.py.

Single instance: the daemon holds an exclusive flock on <state>/tsmd.lock for its lifetime.
The kernel drops it when the process dies, even by kill -9, so whoever gets the lock knows
any socket or PID file left behind is stale and removes it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, cast

from ..client import protocol
from ..client.lifecycle import acquire_lock
from ..client.peer import foreign_uid
from ..config import Settings
from ..errors import SystemFailure
from ..logfile import private_log_handler
from ..socketpath import in_state_dir
from ..statedir import private_umask, socket_dir, socket_folder_checked, write_private
from ..workspace import StatePaths
from .connections import Connections

log = logging.getLogger("tsm.daemon")
REQUEST_SECONDS = 10.0  # a request's frame, once begun, must arrive whole within this
SWITCH_INTERVAL = 0.001  # seconds; Python's default is 0.005


def setup_logging(state: StatePaths) -> IO[Any]:
    """Log to <state>/logs/tsmd.log (rotated at 5 MB, 3 kept); returns the open log stream,
    which also receives the embedding workers' stderr."""
    handler = private_log_handler(
        state.root, "tsmd.log", "%(asctime)s %(levelname)s %(threadName)s %(message)s"
    )
    root = logging.getLogger("tsm")
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if os.environ.get("TSM_DEBUG") == "1" else logging.INFO)
    return cast(IO[Any], handler.stream)


def remove_stale(state: StatePaths) -> list[str]:
    """Call with the instance lock held: whatever socket/PID file exists is left from a crash.
    UnsafePath when the socket's runtime folder is not ours."""
    socket_folder_checked(state.socket, state.root)
    removed = []
    for path in (state.socket, state.pid):
        try:
            path.unlink()
            removed.append(path.name)
        except FileNotFoundError:
            pass
    return removed


class Server:
    """Accept loop and connection threads; `handlers` does the work."""

    def __init__(self, settings: Settings, *, watch: bool = True) -> None:
        from .handlers import Handlers

        self.settings = settings
        self.state = StatePaths(settings.state_dir)
        self.stopping = threading.Event()
        self.started = time.time()
        self._connections: Connections | None = None
        self._last_socket_check = time.monotonic()
        self.handlers = Handlers(self, watch=watch)
        self._listener: socket.socket | None = None

    def bind(self) -> None:
        path = str(self.state.socket)
        if not in_state_dir(path, str(self.state.root)):
            socket_dir(Path(path).parent)  # the user's runtime folder, checked
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with private_umask():  # the socket is born 0700: no window where others connect
                listener.bind(path)
        except OSError as exc:
            listener.close()
            raise SystemFailure(
                f"the daemon cannot listen on {path}: {exc.strerror or exc}",
                "tsm works without its daemon meanwhile; see `tsm doctor`",
            ) from None
        os.chmod(path, 0o600)
        listener.listen(256)
        self._listener = listener
        self._socket_inode = os.stat(path).st_ino

    def serve(self) -> None:
        """Accept and answer until `stopping` (connections.py bounds what clients hold)."""
        assert self._listener is not None
        self._connections = Connections(self._listener, self._serve_request, self.stopping)
        log.info("serving at most %d connections at once", self._connections.cap)
        self._connections.run(self._check_socket)

    def connection_stats(self) -> dict[str, int]:
        return {} if self._connections is None else self._connections.stats()

    def _check_socket(self) -> None:
        if time.monotonic() - self._last_socket_check < 5:
            return
        self._last_socket_check = time.monotonic()
        if not self._socket_is_ours():
            log.warning("socket %s removed or replaced; exiting", self.state.socket)
            self.stopping.set()

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.state.socket).st_ino == self._socket_inode
        except OSError:
            return False

    def _serve_request(self, conn: socket.socket) -> bool:
        """Answer the request arriving on `conn`; whether to keep it open for another."""
        try:
            uid = foreign_uid(conn)
        except OSError:
            return False
        if uid is not None:
            log.warning("refused a connection from uid %s", uid)
            _reply(
                conn,
                protocol.error(
                    "connections from other users are refused", kind="permission_denied"
                ),
            )
            return False
        try:
            message = protocol.receive(conn, protocol.MAX_REQUEST_BYTES, REQUEST_SECONDS)
        except (protocol.ConnectionClosed, TimeoutError, OSError):
            return False
        except protocol.ProtocolError as exc:
            # A bad frame cannot be skipped reliably: answer, then close.
            log.info("bad frame: %s", exc)
            _reply(conn, protocol.error(str(exc), kind=exc.kind, exit_code=2))
            _drain(conn)
            return False
        reply = self.handlers.dispatch(message)
        return _reply(conn, reply) and not self.stopping.is_set()

    def shutdown(self) -> None:
        self.stopping.set()


def _drain(conn: socket.socket, limit: int = 4 * 1024 * 1024, seconds: float = 1.0) -> None:
    """Read and discard what the peer still sends before closing: closing a socket with
    unread input makes the kernel reset the connection, and the peer could lose our reply."""
    try:
        conn.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + seconds
        while limit > 0 and time.monotonic() < deadline:
            conn.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = conn.recv(65536)
            if not chunk:
                break
            limit -= len(chunk)
    except OSError:
        pass


def _reply(conn: socket.socket, reply: dict[str, Any]) -> bool:
    try:
        protocol.send(conn, reply, timeout=30.0)
        return True
    except (OSError, TimeoutError):
        return False  # the client went away (e.g. a hook killed at its deadline)


def run(settings: Settings, *, watch: bool = True) -> int:
    """The daemon's main: lock, clean up, bind, serve until SIGTERM or `tsm stop`."""
    state = StatePaths(settings.state_dir)
    lock_fd = acquire_lock(state)
    if lock_fd is None:
        print(f"tsm daemon: already running for {settings.state_dir}", file=sys.stderr)
        return 0
    log_stream = setup_logging(state)
    # The writer thread tokenizes in Python for seconds on end (a re-index, a burst of files);
    # a search thread then waits up to the switch interval for the GIL at every SQLite call
    # it makes. 1 ms instead of 5 ms keeps searches quick during writes
    # (bench/daemon_latency.py, "search during reindex").
    sys.setswitchinterval(SWITCH_INTERVAL)
    removed = remove_stale(state)
    if removed:
        log.warning("removed stale %s left by a previous daemon", ", ".join(removed))
    server = Server(settings, watch=watch)
    server.handlers.start(log_stream)
    try:
        server.bind()
    except BaseException as exc:
        log.error("daemon %s cannot start: %s", os.getpid(), exc)
        server.handlers.stop()
        os.close(lock_fd)
        raise
    write_private(state.pid, f"{os.getpid()}\n".encode("ascii"))
    log.info(
        "daemon %s listening on %s (index root %s)", os.getpid(), state.socket, settings.index_root
    )

    def on_signal(signum: int, frame: Any) -> None:
        server.shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        server.serve()
    finally:
        log.info("daemon %s stopping", os.getpid())
        for path in (state.socket, state.pid):
            if path == state.socket and not server._socket_is_ours():
                continue
            Path(path).unlink(missing_ok=True)
        server.handlers.stop()
        log.info("daemon %s stopped", os.getpid())
        os.close(lock_fd)
    return 0
