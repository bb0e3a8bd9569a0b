"""Who may use `tsm mcp --http`: with its default settings (loopback, no TSM_MCP_TOKEN) only a
client that sends the token `tsm mcp token` shows. Loopback is shared by every user of the
machine, so without one another uid read notes and transcripts. A real server subprocess,
real HTTP requests, and (when the tests run as root) a request from uid `nobody`."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_mcp_server import (  # noqa: F401 (index_env is a fixture)
    index_env,
    raw_exchange,
    shown_token,
    start_http,
    stop,
)

NOTE = "daily/2026-03-15.md"
NOTE_TEXT = "狩猟免許を取得した"


def read_note(port: int, headers: dict[str, str]) -> tuple[int, str]:
    """initialize, then `tools/call get` of NOTE, as a client would: the last status and
    body (the first refusal ends it)."""
    status, replied, body = raw_exchange(port, headers)
    if status != 200:
        return status, body
    session = {
        "mcp-session-id": replied["mcp-session-id"],
        "mcp-protocol-version": "2025-06-18",
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    raw_exchange(port, headers | session, initialized)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "get", "arguments": {"path": NOTE}},
    }
    status, _, body = raw_exchange(port, headers | session, call)
    return status, body


def test_default_server_reads_nothing_to_a_client_without_the_token(
    index_env: dict[str, str],  # noqa: F811
) -> None:
    proc, port = start_http(index_env, "--no-warmup")
    try:
        token = shown_token(index_env)
        for headers in (
            {},
            {"Authorization": "Bearer " + "x" * len(token)},
            {"Authorization": token},
        ):
            status, body = read_note(port, headers)
            assert status == 401, (headers, body)
            assert NOTE_TEXT not in body and token not in body
            assert body.strip() == "a valid bearer token is required (`tsm mcp token` shows it)"
        status, body = read_note(port, {"Authorization": f"Bearer {token}"})
        assert status == 200 and NOTE_TEXT in body
    finally:
        stop(proc)
    assert token not in proc.stderr.read()  # never printed, so never in a client's log


NOBODY_CLIENT = """
import http.client, json, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "x", "version": "0"}}}
conn.request("POST", "/mcp", json.dumps(body), {"Host": "127.0.0.1:" + sys.argv[1],
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
response = conn.getresponse()
print(response.status, "mcp-session-id" in {k.lower() for k, _ in response.getheaders()})
try:
    open(sys.argv[2]).read()
    print("token readable")
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
def test_another_uid_gets_401_and_cannot_read_the_token(
    index_env: dict[str, str],  # noqa: F811
) -> None:
    proc, port = start_http(index_env, "--no-warmup")
    try:
        token_path = Path(index_env["TSM_INDEX_ROOT"]) / ".tsm" / "mcp-token"
        other = subprocess.run(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
            + ["/usr/bin/python3", "-c", NOBODY_CLIENT, str(port), str(token_path)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        assert other.returncode == 0, other.stderr
        assert other.stdout.split() == ["401", "False", "PermissionError"]
    finally:
        stop(proc)


def test_token_is_kept_private_and_never_written_through_a_link(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    first = shown_token(env)
    kept = root / ".tsm" / "mcp-token"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert len(first) >= 40 and shown_token(env) == first  # made once, then kept

    # A token another user could read, or one a cloned repository shipped (0644 under the
    # usual umask), is no secret: a new one replaces it.
    kept.chmod(0o644)
    second = shown_token(env)
    assert second != first and stat.S_IMODE(kept.stat().st_mode) == 0o600

    # A link planted at the name is replaced, never followed nor written through.
    outside = tmp_path / "outside.txt"
    outside.write_text("known-to-the-attacker-0123456789\n")
    kept.unlink()
    kept.symlink_to(outside)
    third = shown_token(env)
    assert third not in (second, "known-to-the-attacker-0123456789")
    assert outside.read_text() == "known-to-the-attacker-0123456789\n"
    assert not kept.is_symlink() and kept.read_text().strip() == third

    rotated = subprocess.run(
        [sys.executable, "-m", "tsm", "mcp", "token", "--new", "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rotated.returncode == 0, rotated.stderr
    assert '"created": true' in rotated.stdout and third not in rotated.stdout


def test_token_from_the_environment_wins_and_must_be_long(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(tmp_path), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    assert shown_token(env | {"TSM_MCP_TOKEN": "team-token-0123456789"}) == "team-token-0123456789"
    assert not (tmp_path / ".tsm" / "mcp-token").exists()
    short = subprocess.run(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", "1"],
        env=env | {"TSM_MCP_TOKEN": "short"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert short.returncode == 1 and "too short" in short.stderr
