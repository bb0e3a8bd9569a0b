"""What clients of `tsm mcp --http` may hold: a request must arrive whole
within --request-timeout, connections past --max-connections close the oldest idle one, and
sessions past --max-sessions end the least recently used idle one instead of a 503. Real
sockets against a real server subprocess, loopback only, bounded loops; no timing is
asserted beyond generous bounds (figures: bench/mcp_http_limits.py)."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_mcp_server import raw_exchange, shown_token, start_http, stop

GENEROUS = 60.0  # seconds a server under load may take to close what it should


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An empty root: nothing here needs an index, only the HTTP front door."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    return environ | {
        "TSM_INDEX_ROOT": str(tmp_path),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
        "TSM_EMBEDDER": "none",
    }


@pytest.fixture
def server(env: dict[str, str], request: pytest.FixtureRequest) -> Iterator[tuple[int, str]]:
    """`tsm mcp --http` with the options the test passes (indirect parameter); port, token."""
    proc, port = start_http(env, "--no-warmup", *getattr(request, "param", ()))
    try:
        yield port, shown_token(env)
    finally:
        stop(proc)


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` within `within` seconds (EOF or reset)."""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if readable:
            try:
                if sock.recv(4096) == b"":
                    return True
            except ConnectionError:
                return True
    return False


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=GENEROUS)


@pytest.mark.parametrize("server", [("--request-timeout", "1")], indirect=True)
def test_headers_that_never_end_are_cut_off(server: tuple[int, str]) -> None:
    port, _ = server
    silent, slow = connect(port), connect(port)
    try:
        slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        assert closed_by_server(silent, GENEROUS)
        assert closed_by_server(slow, GENEROUS)
    finally:
        silent.close()
        slow.close()


@pytest.mark.parametrize("server", [("--request-timeout", "1")], indirect=True)
def test_a_trickled_body_is_cut_off(server: tuple[int, str]) -> None:
    port, token = server
    sock = connect(port)
    try:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 100000\r\n\r\n{"
        )
        deadline = time.monotonic() + GENEROUS
        cut = False
        while not cut and time.monotonic() < deadline:  # a byte now and then, never all
            try:
                sock.sendall(b" ")
            except OSError:
                cut = True
                break
            cut = closed_by_server(sock, 0.2)
        assert cut
    finally:
        sock.close()


@pytest.mark.parametrize(
    "server", [("--max-connections", "4", "--request-timeout", "600")], indirect=True
)
def test_idle_connections_past_the_cap_make_room_for_a_real_client(
    server: tuple[int, str],
) -> None:
    port, token = server
    idle = [connect(port) for _ in range(8)]
    try:
        for sock in idle[:2]:
            sock.sendall(b"POST /mcp HTTP/1.1\r\n")  # half a request: idle as well
        assert raw_exchange(port, {"Authorization": f"Bearer {token}"})[0] == 200
        # 8 idle + 1 real with room for 4: the 5 oldest idle ones were closed, in order.
        closed = [closed_by_server(sock, 5.0 if i < 5 else 0.5) for i, sock in enumerate(idle)]
        assert closed == [True] * 5 + [False] * 3
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize("server", [("--max-sessions", "3")], indirect=True)
def test_sessions_past_the_cap_end_the_least_recently_used(server: tuple[int, str]) -> None:
    port, token = server
    bearer = {"Authorization": f"Bearer {token}"}
    sessions = []
    for _ in range(3):
        status, headers, _ = raw_exchange(port, bearer)
        assert status == 200
        sessions.append(headers["mcp-session-id"])

    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}

    def answers(session: str) -> int:
        version = {"mcp-protocol-version": "2025-06-18"}
        return raw_exchange(port, bearer | version | {"mcp-session-id": session}, ping)[0]

    assert answers(sessions[0]) == 200  # now the most recently used: sessions[1] is the oldest
    status, headers, _ = raw_exchange(port, bearer)
    assert status == 200, "a fourth client was refused"
    assert answers(sessions[1]) == 404
    assert [answers(s) for s in (sessions[0], sessions[2], headers["mcp-session-id"])] == [200] * 3


def test_limits_out_of_range_are_a_usage_error(env: dict[str, str]) -> None:
    for option, value in [
        ("--request-timeout", "nan"),
        ("--request-timeout", "inf"),
        ("--request-timeout", "0"),
        ("--max-connections", "0"),
        ("--max-sessions", "-1"),
    ]:
        proc = subprocess.run(
            [sys.executable, "-m", "tsm", "mcp", "--http", option, value],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1, (option, value, proc.stderr)
        error = json.loads(proc.stderr)  # stdout is no terminal: the JSON error object
        assert error["kind"] == "user_error" and "expected" in error["error"], error
