"""Issue 30 items 3 and 8: `tsm mcp --http` with its default settings, attacked by another
local user over loopback: reading notes without credentials, and holding the server with
slow, trickled or idle connections and sessions so that the real client cannot get in."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import Lab, Outcome

SECRET = "the-vault-code-is-7731"
# No search here needs the model; the lexicon a first index builds (JMdict, a minute under
# load) is shared with the user's own cache instead of built again in every lab.
FAST = {
    "TSM_EMBEDDER": "none",
    "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "0"},
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _server(lab: Lab, *args: str) -> Iterator[int]:
    """A default `tsm mcp --http` over a vault holding one secret note; its port."""
    notes = lab.vault / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "diary.md").write_text(f"# Diary\n\n{SECRET}\n", encoding="utf-8")
    indexed = lab.tsm("index", "-f", "json", **FAST)
    assert indexed.returncode == 0, indexed.stderr
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", str(port), "--no-warmup", *args],
        cwd=lab.vault,
        env=lab.environ(**FAST),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("tsm mcp --http did not start") from None
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _token(lab: Lab) -> str:
    shown = lab.tsm("mcp", "token", "-f", "text", **FAST)
    return shown.stdout.decode().strip()


def _post(
    port: int, body: dict[str, object], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/mcp",
            json.dumps(body),
            {
                "Host": f"127.0.0.1:{port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **(headers or {}),
            },
        )
        response = conn.getresponse()
        replied = {k.lower(): v for k, v in response.getheaders()}
        return response.status, replied, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


# What another uid runs: initialize, then `get` the diary; prints the statuses and whether
# the secret came back. Standard library only, so the system python3 runs it as `nobody`.
_READER = """
import http.client, json, sys
port, secret = int(sys.argv[1]), sys.argv[2]
def post(body, extra):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/mcp", json.dumps(body), {"Host": "127.0.0.1:%d" % port,
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **extra})
    r = conn.getresponse()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode()
status, headers, _ = post(json.loads(sys.argv[3]), {})
got = "no"
if status == 200:
    session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get", "arguments": {"path": "notes/diary.md"}}}
    status, _, body = post(call, session)
    got = "yes" if secret in body else "no"
print(status, got)
"""


def another_user_reads_a_note(lab: Lab) -> Outcome:
    """Another local uid (nobody, when run as root) sends initialize + `get` to a default server."""
    as_other = os.geteuid() == 0 and shutil.which("setpriv") is not None
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if as_other else []
    python = (
        "/usr/bin/python3" if as_other and Path("/usr/bin/python3").exists() else sys.executable
    )
    with _server(lab) as port:
        run = subprocess.run(
            [*prefix, python, "-c", _READER, str(port), SECRET, json.dumps(INITIALIZE)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
    who = "uid nobody" if as_other else "a client without the token"
    if run.returncode != 0:
        return Outcome(False, f"harness: {run.stderr.strip().splitlines()[-1:]}")
    status, got = run.stdout.split()
    return Outcome(status == "401" and got == "no", f"{who}: HTTP {status}, note read: {got}")


def a_guessed_token(lab: Lab) -> Outcome:
    """A client that sends a token of the right length but wrong, or the token without `Bearer`."""
    with _server(lab) as port:
        token = _token(lab)
        wrong = "A" * len(token)
        answers = {
            _post(port, INITIALIZE, {"Authorization": h})[0] for h in (f"Bearer {wrong}", token)
        }
        good = _post(port, INITIALIZE, {"Authorization": f"Bearer {token}"})[0]
    return Outcome(answers == {401} and good == 200, f"wrong: {sorted(answers)}, right: {good}")


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (a zero-timeout look)."""
    import select

    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(4096) == b""
    except OSError:
        return True


def slow_headers_keep_the_user_out(lab: Lab) -> Outcome:
    """300 connections that send half a request line and stop, then the user's client."""
    with _server(lab) as port:
        token = _token(lab)
        slow = []
        try:
            for _ in range(300):
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                sock.sendall(b"POST /mcp HTTP/1.1\r\n")
                slow.append(sock)
            status = _post(port, INITIALIZE, {"Authorization": f"Bearer {token}"})[0]
            held = sum(not _closed(s) for s in slow)
        finally:
            for sock in slow:
                sock.close()
    return Outcome(status == 200 and held <= 64, f"user: HTTP {status}; slow ones held: {held}")


def trickled_bodies_stay_open(lab: Lab) -> Outcome:
    """20 requests whose body comes a byte a second, with --request-timeout 2."""
    with _server(lab, "--request-timeout", "2") as port:
        token = _token(lab)
        socks = []
        try:
            for _ in range(20):
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                sock.sendall(
                    f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    f"Authorization: Bearer {token}\r\nContent-Length: 100000\r\n\r\n{{".encode()
                )
                socks.append(sock)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(_closed(s) for s in socks):
                for sock in socks:
                    try:
                        sock.sendall(b" ")
                    except OSError:
                        pass
                time.sleep(1)
            left = sum(not _closed(s) for s in socks)
        finally:
            for sock in socks:
                sock.close()
    return Outcome(left == 0, f"still open after the deadline (+ up to 60 s): {left} of 20")


def idle_sessions_fill_the_server(lab: Lab) -> Outcome:
    """A runaway client (with the token) opens 40 sessions past --max-sessions 20; then one more."""
    with _server(lab, "--max-sessions", "20") as port:
        bearer = {"Authorization": f"Bearer {_token(lab)}"}
        refused = sum(_post(port, INITIALIZE, bearer)[0] != 200 for _ in range(40))
        status = _post(port, INITIALIZE, bearer)[0]
    return Outcome(refused == 0 and status == 200, f"refused: {refused}; the next: HTTP {status}")


ATTACKS = [
    another_user_reads_a_note,
    a_guessed_token,
    slow_headers_keep_the_user_out,
    trickled_bodies_stay_open,
    idle_sessions_fill_the_server,
]
