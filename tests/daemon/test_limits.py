"""The daemon under more clients than it has descriptors: idle connections hold no thread,
the longest idle gives way at the cap, and an accept error (EMFILE) is transient."""

from __future__ import annotations

import os
import resource
import socket
import sys
import time
from pathlib import Path

import pytest
from daemon_harness import Harness, wait_for
from patience import scaled

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts descriptors and threads in /proc"
)
NOFILE = 96  # the daemon's soft descriptor limit in these tests
CONNECT_WAIT = 60.0  # a UNIX connect fails at once (EAGAIN) while the backlog is full


def connect_idle(path: Path) -> socket.socket | None:
    """A connection that will send nothing, or None once the daemon is gone."""
    deadline = time.monotonic() + scaled(CONNECT_WAIT)
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(str(path))
            return sock
        except BlockingIOError:
            sock.close()
            if time.monotonic() > deadline:
                raise AssertionError("the daemon accepted nothing for a minute") from None
            time.sleep(0.005)
        except OSError:  # ECONNREFUSED / ENOENT: no daemon on the socket any more
            sock.close()
            return None


def open_idle(h: Harness, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = connect_idle(h.socket)
        if sock is None:
            break
        socks.append(sock)
    return socks


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def searches(h: Harness) -> int:
    daemon = h.status()["daemon"]
    assert daemon["state"] == "running", daemon
    return int(daemon["searches"])


def search_by_the_daemon(h: Harness) -> None:
    before = searches(h)
    result = h.cli("search", "install git", "-f", "json")
    assert result.code == 0, result.err
    assert result.json()["results"][0]["source"]["path"] == "notes/git-install.md"
    assert searches(h) > before, "the search ran in-process: the daemon did not answer"


def test_three_times_the_descriptor_limit_in_idle_clients(harness: Harness) -> None:
    """Idle connections past `ulimit -n` made accept() fail with EMFILE,
    which killed the daemon; now the longest-idle one is closed to make room."""
    harness.start("--no-watch", nofile=NOFILE)
    search_by_the_daemon(harness)
    socks = open_idle(harness, 3 * NOFILE)
    try:
        assert harness.proc is not None and harness.proc.poll() is None, "the daemon died"
        assert len(socks) == 3 * NOFILE
        search_by_the_daemon(harness)
        connections = harness.status()["daemon"]["connections"]
        assert connections["open"] <= connections["cap"] < NOFILE
        assert connections["evicted"] >= 3 * NOFILE - connections["cap"]
        socks[0].setblocking(True)
        socks[0].settimeout(scaled(60))
        assert socks[0].recv(1) == b"", "the longest idle connection is still open"
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs prlimit(2)")
def test_an_accept_error_is_transient(daemon: Harness) -> None:
    """The descriptor limit lowered under the running daemon: accept() fails with EMFILE
    (its cap was computed from the old limit), the daemon pauses and goes on serving."""
    assert daemon.proc is not None
    pid = daemon.proc.pid
    search_by_the_daemon(daemon)
    hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (descriptors(pid) + 8, hard))
    socks = open_idle(daemon, 64)
    try:
        assert len(socks) == 64
        # A ping queued behind them is answered once the daemon went through all 64.
        assert daemon.answers(), "the daemon died at the descriptor limit"
    finally:
        for sock in socks:
            sock.close()
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (1024, hard))
    search_by_the_daemon(daemon)
    assert daemon.status()["daemon"]["connections"]["accept_errors"] >= 1


def test_idle_connections_hold_no_thread(daemon: Harness) -> None:
    assert daemon.proc is not None
    pid = daemon.proc.pid
    wait_for(daemon.answers, 60, "a ping")
    before = threads(pid)
    socks = open_idle(daemon, 100)
    try:
        assert len(socks) == 100
        # Accepted in order: once a later connection is answered, these 100 were accepted.
        assert daemon.answers()
        assert threads(pid) < before + 10
    finally:
        for sock in socks:
            sock.close()
