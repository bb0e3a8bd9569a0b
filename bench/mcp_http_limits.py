"""`tsm mcp --http` held by slow, trickling and idle clients (issue 30 item 8): what a real
client gets meanwhile, and what the server holds. Before the limits (http_limits.py) the
issue measured: 1,100 slow connections denied real clients, 50 trickled bodies were still
open after 90 s, and 10,000 idle sessions (+365 MB) made new clients get 503 for up to
30 minutes.

On an empty root (no index needed: only the front door is measured), a server with its
default limits, or the options after `--`:

- slow: --slow connections each send half a request line and stop; then a real client
  (with the token) times its `initialize`; how many slow ones the server still holds;
- trickle: --trickle requests send their headers and then a byte a second; seconds until
  the server has closed them all (bounded by --wait);
- sessions: --sessions `initialize` calls that never come back; the server's RSS before
  and after, and the status a new client gets.

    .venv/bin/python bench/mcp_http_limits.py
    .venv/bin/python bench/mcp_http_limits.py --sessions 10000 -- --max-sessions 20000
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def initialize(port: int, token: str) -> tuple[int, float]:
    """One real client's initialize: HTTP status and wall time in ms."""
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request(
            "POST",
            "/mcp",
            INITIALIZE,
            {
                "Host": f"127.0.0.1:{port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {token}",
            },
        )
        response = conn.getresponse()
        response.read()
        return response.status, (time.perf_counter() - started) * 1000
    except OSError:
        return 0, (time.perf_counter() - started) * 1000
    finally:
        conn.close()


def still_open(socks: list[socket.socket]) -> int:
    """How many of `socks` the server has not closed (a look that does not wait; select()
    cannot watch descriptors past 1024)."""
    count = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            count += bool(sock.recv(4096))  # a reply (503): the server still holds it
        except BlockingIOError:
            count += 1
        except OSError:
            pass
        finally:
            sock.setblocking(True)
    return count


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", type=int, default=1100)
    parser.add_argument("--trickle", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--wait", type=float, default=90.0)
    parser.add_argument("server_args", nargs="*", help="options for tsm mcp --http, after --")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="tsm-mcp-limits-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {
        "TSM_INDEX_ROOT": str(root),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
        "TSM_EMBEDDER": "none",
    }
    port = free_port()
    command = [sys.executable, "-m", "tsm", "mcp", "--http", "--port", str(port), "--no-warmup"]
    proc = subprocess.Popen(
        command + args.server_args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        token = subprocess.run(
            [sys.executable, "-m", "tsm", "mcp", "token", "-f", "text"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        deadline = time.monotonic() + 120
        while initialize(port, token)[0] != 200:
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        print(f"server: {' '.join(['tsm mcp --http', *args.server_args])}")
        print(f"baseline initialize: {initialize(port, token)[1]:.0f} ms\n")

        slow = []
        for _ in range(args.slow):
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                sock.sendall(b"POST /mcp HTTP/1.1\r\n")
                slow.append(sock)
            except OSError:
                break
        status, ms = initialize(port, token)
        print(
            f"slow: {len(slow)} half-sent requests; a real initialize: HTTP {status}, {ms:.0f} ms;"
        )
        print(f"      slow connections the server still holds: {still_open(slow)}")
        for sock in slow:
            sock.close()

        trickled = []
        for _ in range(args.trickle):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{".encode()
            )
            trickled.append(sock)
        started = time.monotonic()
        while (left := still_open(trickled)) and time.monotonic() - started < args.wait:
            for sock in trickled:
                try:
                    sock.sendall(b" ")
                except OSError:
                    pass
            time.sleep(1.0)
        took = time.monotonic() - started
        print(f"trickle: {args.trickle} bodies a byte a second; open after {took:.0f} s: {left}")
        for sock in trickled:
            sock.close()

        before = rss_mb(proc.pid)
        refused = 0
        started = time.monotonic()
        for _ in range(args.sessions):
            refused += initialize(port, token)[0] != 200
        status, ms = initialize(port, token)
        print(
            f"sessions: {args.sessions} opened in {time.monotonic() - started:.0f} s "
            f"({refused} refused); RSS {before:.0f} -> {rss_mb(proc.pid):.0f} MB; "
            f"a new client: HTTP {status} in {ms:.0f} ms"
        )
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
