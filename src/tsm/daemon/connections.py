"""The daemon's connections: one thread accepts and watches every open connection with a
selector, and a bounded pool of threads reads and answers the requests.

An idle connection costs a descriptor, not a thread, and is closed at its deadline; at the
cap (from the descriptor limit) the longest-idle one is closed to make room; a client that
left is closed without waking a worker. An accept error (no descriptor left, say) is
transient: accepting pauses briefly and the daemon keeps serving.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import resource
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

log = logging.getLogger("tsm.daemon")
MAX_CONNECTIONS = 256  # open at once; each costs a descriptor, a busy one also a worker
MAX_WORKERS = 32  # threads answering requests; more clients wait their turn
IDLE_SECONDS = 10.0  # a connection that sends no request for this long is closed
ACCEPT_BACKOFF = 0.1  # seconds without accepting after an accept error
TICK_SECONDS = 0.5  # how often `tick` runs, at least
_LOG_EVERY = 10.0  # seconds between two log lines of the same trouble
# Free descriptors kept for the rest of the daemon (SQLite, the workers' pipes, the log):
# connections may take at most half of what the limit leaves at start.
_FD_SHARE = 2

Serve = Callable[[socket.socket], bool]


def connection_cap(limit: int = MAX_CONNECTIONS) -> int:
    """How many connections may be open at once under this process's descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limit
    try:
        in_use = len(os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"))
    except OSError:
        in_use = 64
    return max(1, min(limit, (soft - in_use) // _FD_SHARE))


class Workers:
    """Up to `limit` daemon threads running `serve(conn)`, started as work needs them and
    then kept. Daemon threads: one stuck in a long request never holds up the exit."""

    def __init__(self, limit: int, serve: Callable[[socket.socket], None]) -> None:
        self._limit = limit
        self._serve = serve
        self._queue: queue.SimpleQueue[socket.socket] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._waiting = 0

    def submit(self, conn: socket.socket) -> None:
        with self._lock:
            self._waiting += 1
            if self._waiting > self._idle and self._threads < self._limit:
                self._threads += 1
                threading.Thread(
                    target=self._run, name=f"conn-worker-{self._threads}", daemon=True
                ).start()
        self._queue.put(conn)

    @property
    def threads(self) -> int:
        return self._threads

    def _run(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            conn = self._queue.get()
            with self._lock:
                self._idle -= 1
                self._waiting -= 1
            self._serve(conn)


class Connections:
    """The accept-and-watch loop over `listener`. `serve(conn)` answers one request on a
    worker and says whether to keep the connection for another."""

    def __init__(
        self,
        listener: socket.socket,
        serve: Serve,
        stopping: threading.Event,
        *,
        max_connections: int | None = None,
        workers: int = MAX_WORKERS,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self._listener = listener
        self._serve = serve
        self._stopping = stopping
        self.cap = connection_cap() if max_connections is None else max_connections
        self._idle_seconds = idle_seconds
        self._selector = selectors.DefaultSelector()
        self._idle: OrderedDict[socket.socket, float] = OrderedDict()  # oldest first
        self._busy = 0
        self._done: queue.SimpleQueue[tuple[socket.socket, bool]] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._workers = Workers(workers, self._answer)
        self._accepting = True
        self._paused_until = 0.0
        self._logged: dict[str, float] = {}
        self.accepted = 0
        self.evicted = 0
        self.accept_errors = 0

    # -- the loop (one thread) --------------------------------------------------------------
    def run(self, tick: Callable[[], None]) -> None:
        """Serve until `stopping` is set; `tick()` at least every TICK_SECONDS."""
        self._listener.setblocking(False)
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        next_tick = time.monotonic() + TICK_SECONDS
        try:
            while not self._stopping.is_set():
                now = time.monotonic()
                for key, _ in self._selector.select(self._timeout(now, next_tick)):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._drain_wakes()
                    else:
                        self._readable(key.fileobj)  # type: ignore[arg-type]
                self._finish_done()
                now = time.monotonic()
                self._expire(now)
                if not self._accepting and now >= self._paused_until and self._room():
                    self._resume_accepting()
                if now >= next_tick:
                    next_tick = now + TICK_SECONDS
                    tick()
        finally:
            for conn in list(self._idle):
                self._close(conn)
            self._selector.close()
            self._close(self._wake_r)
            self._close(self._wake_w)

    def stats(self) -> dict[str, int]:
        return {
            "open": len(self._idle) + self._busy,
            "busy": self._busy,
            "cap": self.cap,
            "workers": self._workers.threads,
            "accepted": self.accepted,
            "evicted": self.evicted,
            "accept_errors": self.accept_errors,
        }

    def _timeout(self, now: float, next_tick: float) -> float:
        until = next_tick
        if self._idle:
            until = min(until, next(iter(self._idle.values())))
        if not self._accepting and self._paused_until > now:
            until = min(until, self._paused_until)
        return max(0.0, until - now)

    def _room(self) -> bool:
        return len(self._idle) + self._busy < self.cap

    def _accept(self) -> None:
        for _ in range(64):  # a batch, then the other connections get their turn
            if not self._room() and not self._evict_oldest():
                self._pause_accepting(0.0)  # all busy: resumes when one is done
                return
            try:
                conn, _ = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                self._accept_failed(exc)
                return
            self.accepted += 1
            self._watch(conn)

    def _accept_failed(self, exc: OSError) -> None:
        """Out of descriptors or kernel memory, or a client that left mid-accept: none of it
        is the daemon's end. Pause accepting, free the longest-idle connection when out of
        descriptors, and go on serving the others."""
        self.accept_errors += 1
        if exc.errno == errno.ECONNABORTED:
            return
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            self._evict_oldest()
        self._log_now("accept", "accept failed (%s); pausing %.1f s", exc, ACCEPT_BACKOFF)
        self._pause_accepting(ACCEPT_BACKOFF)

    def _pause_accepting(self, seconds: float) -> None:
        if self._accepting:
            self._selector.unregister(self._listener)
            self._accepting = False
        self._paused_until = time.monotonic() + seconds

    def _resume_accepting(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._accepting = True

    def _watch(self, conn: socket.socket) -> None:
        """Wait (without a thread) for a request on `conn`, until its idle deadline."""
        try:
            conn.setblocking(False)
            self._selector.register(conn, selectors.EVENT_READ)
        except (OSError, ValueError):
            self._close(conn)
            return
        self._idle[conn] = time.monotonic() + self._idle_seconds

    def _readable(self, conn: socket.socket) -> None:
        self._unwatch(conn)
        try:
            left = conn.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            left = False
        except OSError:
            left = True
        if left:  # the client closed: no worker needed
            self._close(conn)
            return
        conn.setblocking(True)
        self._busy += 1
        self._workers.submit(conn)

    def _unwatch(self, conn: socket.socket) -> None:
        self._idle.pop(conn, None)
        try:
            self._selector.unregister(conn)
        except (KeyError, ValueError):
            pass

    def _evict_oldest(self) -> bool:
        """Close the connection idle the longest; False when none is idle."""
        if not self._idle:
            return False
        conn = next(iter(self._idle))
        self._unwatch(conn)
        self._close(conn)
        self.evicted += 1
        self._log_now("evict", "%d connections open: closing the longest idle", self.cap)
        return True

    def _expire(self, now: float) -> None:
        while self._idle:
            conn, deadline = next(iter(self._idle.items()))
            if deadline > now:
                return
            self._unwatch(conn)
            self._close(conn)

    def _finish_done(self) -> None:
        while True:
            try:
                conn, keep = self._done.get_nowait()
            except queue.Empty:
                return
            self._busy -= 1
            if keep and not self._stopping.is_set():
                self._watch(conn)
            else:
                self._close(conn)

    def _drain_wakes(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    @staticmethod
    def _close(conn: socket.socket) -> None:
        try:
            conn.close()
        except OSError:
            pass

    def _log_now(self, what: str, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._logged.get(what, -_LOG_EVERY) >= _LOG_EVERY:
            self._logged[what] = now
            log.warning(message, *args)

    # -- on a worker ----------------------------------------------------------------------
    def _answer(self, conn: socket.socket) -> None:
        keep = False
        try:
            keep = self._serve(conn)
        except Exception:  # a bug in one request is not the daemon's end
            log.exception("connection failed")
        self._done.put((conn, keep))
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # the loop is awake already (the pair's buffer is full) or gone
