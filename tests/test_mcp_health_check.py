"""A health check of `tsm mcp` (what `claude mcp list` does: start the stdio server, send
initialize, close stdin) must start nothing that outlives it: it once left a daemon running
for the index, started by the server's warm-up. A real `tsm mcp` subprocess with
autostart on, over a real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_mcp_server import index_env  # noqa: F401 (a fixture)

HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "health-check", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def daemons_of(root: Path) -> list[int]:
    """Processes running `tsm daemon` from `root` (a daemon works in its index root)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue  # gone, or not ours to look at
        if b"tsm" in argv and b"daemon" in argv and Path(cwd) == root:
            found.append(int(entry.name))
    return found


def tsm(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tsm", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=env["TSM_INDEX_ROOT"],
    )


def test_initialize_then_eof_leaves_no_daemon(index_env: dict[str, str]) -> None:  # noqa: F811
    env = index_env | {"TSM_AUTOSTART": "1"}
    root = Path(env["TSM_INDEX_ROOT"]).resolve()
    assert daemons_of(root) == []
    try:
        check = tsm(env, "mcp", stdin="".join(json.dumps(m) + "\n" for m in HANDSHAKE))
        assert check.returncode == 0, check.stderr
        reply = json.loads(check.stdout.splitlines()[0])
        assert reply["result"]["serverInfo"]["name"] == "tsm"
        # The server has exited: whatever it spawned is a process by now.
        assert daemons_of(root) == []
        status = json.loads(tsm(env | {"TSM_AUTOSTART": "0"}, "status", "-f", "json").stdout)
        assert status["daemon"]["state"] == "stopped"
    finally:
        tsm(env, "stop", "-f", "json")
