"""Issue 30 items 4 and 9: the daemon under more clients than it has descriptors, a burst of
clients that come and go, and its socket when the state dir's path is too long for one
(the user's runtime folder, which another user or a link may have taken first)."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import Lab, Outcome

FAST = {"TSM_EMBEDDER": "none"}  # keyword search only: the model plays no part here
WAIT = 300  # seconds for one command: the machine may be loaded


def _notes(lab: Lab, root: Path | None = None) -> Path:
    root = root or lab.vault
    (root / "notes").mkdir(parents=True, exist_ok=True)
    (root / "notes" / "git.md").write_text("# Git\n\nInstall git with apt.\n", encoding="utf-8")
    done = lab.tsm("index", "-f", "json", cwd=root, timeout=WAIT, TSM_INDEX_ROOT=str(root), **FAST)
    assert done.returncode == 0, done.stderr
    return root


def _daemon(lab: Lab, nofile: int | None = None) -> subprocess.Popen[bytes]:
    def limit() -> None:
        if nofile is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "daemon", "--no-watch"],
        cwd=lab.vault,
        env=lab.environ(**FAST),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=limit,
    )
    sock = lab.vault / ".tsm" / "tsmd.sock"
    deadline = time.monotonic() + WAIT
    while not sock.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def _idle(path: Path, count: int) -> list[socket.socket]:
    """Connections that send nothing (a UNIX connect fails with EAGAIN while the backlog is
    full: retried for up to 30 s each)."""
    socks: list[socket.socket] = []
    for _ in range(count):
        deadline = time.monotonic() + 30
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.connect(str(path))
                socks.append(sock)
                break
            except BlockingIOError:
                sock.close()
                if time.monotonic() > deadline:
                    return socks
                time.sleep(0.002)
            except OSError:
                sock.close()
                return socks
    return socks


def _searches(lab: Lab, cwd: Path | None = None, **env: str) -> int | None:
    done = lab.tsm("status", "-f", "json", cwd=cwd, timeout=WAIT, **FAST, **env)
    daemon = json.loads(done.stdout)["daemon"] if done.returncode == 0 else {}
    return daemon.get("searches") if daemon.get("state") == "running" else None


def _search_by_daemon(lab: Lab, cwd: Path | None = None, **env: str) -> str | None:
    """None when the daemon answered a search that found the note, else what went wrong."""
    before = _searches(lab, cwd, **env)
    if before is None:
        return "no daemon running"
    done = lab.tsm("search", "install git", "-f", "json", cwd=cwd, timeout=WAIT, **FAST, **env)
    if done.returncode != 0 or not json.loads(done.stdout)["results"]:
        return f"search: exit {done.returncode}"
    after = _searches(lab, cwd, **env)
    return None if after is not None and after > before else "answered in-process"


def idle_clients_past_the_descriptor_limit(lab: Lab) -> Outcome:
    """300 idle connections to a daemon whose `ulimit -n` is 96, then a search."""
    _notes(lab)
    daemon = _daemon(lab, nofile=96)
    socks: list[socket.socket] = []
    try:
        socks = _idle(lab.vault / ".tsm" / "tsmd.sock", 300)
        if daemon.poll() is not None:
            return Outcome(False, f"the daemon died after {len(socks)} idle connections")
        problem = _search_by_daemon(lab)
        return Outcome(problem is None, problem or f"{len(socks)} idle, then answered")
    finally:
        for sock in socks:
            sock.close()
        daemon.terminate()
        daemon.wait(30)


def a_burst_of_clients_that_come_and_go(lab: Lab) -> Outcome:
    """3,000 clients connect, say nothing and leave; then a search."""
    _notes(lab)
    daemon = _daemon(lab)
    try:
        sock = lab.vault / ".tsm" / "tsmd.sock"
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4000)), hard))
        socks = _idle(sock, 3000)
        for each in socks:
            each.close()
        threads = len(os.listdir(f"/proc/{daemon.pid}/task")) if sys.platform == "linux" else 0
        problem = _search_by_daemon(lab)
        return Outcome(
            problem is None and daemon.poll() is None,
            problem or f"{len(socks)} came and went; answered; daemon threads {threads}",
        )
    finally:
        daemon.terminate()
        daemon.wait(30)


def _deep(lab: Lab) -> tuple[Path, dict[str, str]]:
    root = _notes(lab, lab.vault / ("d" * 60) / ("e" * 60))
    runtime = lab.base / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return root, {"TSM_INDEX_ROOT": str(root), "XDG_RUNTIME_DIR": str(runtime)}


def a_root_too_deep_for_a_socket(lab: Lab) -> Outcome:
    """An index root whose .tsm/tsmd.sock passes 108 bytes: `tsm start`, then a search."""
    root, env = _deep(lab)
    start = lab.tsm("start", "-f", "json", cwd=root, timeout=WAIT, **FAST, **env)
    try:
        if start.returncode != 0:
            return Outcome(False, f"start: {start.stderr.decode(errors='replace').strip()}")
        where = json.loads(start.stdout)["socket"]
        problem = _search_by_daemon(lab, root, **env)
        return Outcome(problem is None, problem or f"socket {where}")
    finally:
        lab.tsm("stop", "-f", "json", cwd=root, timeout=WAIT, **FAST, **env)


def a_runtime_folder_taken_first(lab: Lab) -> Outcome:
    """That root's runtime folder made world-writable, then a link, before tsm made it."""
    root, env = _deep(lab)
    folder = Path(env["XDG_RUNTIME_DIR"]) / "tsm"
    seen = []
    for squat in ("world-writable", "link"):
        if squat == "world-writable":
            folder.mkdir()
            folder.chmod(0o777)
        else:
            folder.rmdir()
            (lab.base / "elsewhere").mkdir(mode=0o700)
            folder.symlink_to(lab.base / "elsewhere")
        start = lab.tsm("start", "-f", "json", cwd=root, timeout=WAIT, **FAST, **env)
        search = lab.tsm(
            "search", "install git", "-f", "json", cwd=root, timeout=WAIT, **FAST, **env
        )
        spawned = (root / ".tsm" / "logs" / "tsmd.stderr.log").exists()
        if start.returncode == 0 or search.returncode != 0 or spawned:
            lab.tsm("stop", "-f", "json", cwd=root, timeout=WAIT, **FAST, **env)
            return Outcome(False, f"{squat}: start exit {start.returncode}, spawned {spawned}")
        seen.append(f"{squat}: refused")
    return Outcome(True, "; ".join(seen) + "; searches ran in-process")


ATTACKS = [
    idle_clients_past_the_descriptor_limit,
    a_burst_of_clients_that_come_and_go,
    a_root_too_deep_for_a_socket,
    a_runtime_folder_taken_first,
]
