"""What the daemon writes and whom it talks to: its log, lock,
PID file, socket and DB files are private and never opened through a planted link; its log
keeps one record per line; and a client never talks to a daemon run by another user.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from daemon_harness import Harness, wait_for

NO_MODEL = {"TSM_EMBEDDER": "none"}  # these tests are about files; keyword search suffices
root_only = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another uid")
NOBODY = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def h(harness: Harness) -> Harness:
    harness.env.update(NO_MODEL)
    return harness


@pytest.fixture
def victim(h: Harness) -> Path:
    """A file outside the state dir that must never change (say ~/.bashrc)."""
    path = h.dir / "elsewhere" / "victim.txt"
    path.parent.mkdir()
    path.write_text("untouched\n")
    return path


def assert_untouched(victim: Path) -> None:
    assert victim.read_text() == "untouched\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


def test_every_file_of_a_running_daemon_is_private(h: Harness) -> None:
    """Including the state an older tsm left 0755/0644: the daemon tightens it."""
    h.state.chmod(0o755)
    for db in h.state.glob("tsm.db*"):
        db.chmod(0o644)
    h.start("--no-watch")
    assert h.cli("search", "-f", "json", "--fts-only", "install git").code == 0
    assert mode(h.state) == 0o700 and mode(h.state / "logs") == 0o700
    files = {
        p.name: mode(p)
        for p in (*h.state.iterdir(), *(h.state / "logs").iterdir())
        if not p.is_dir()
    }
    assert {
        "tsm.db",
        "tsm.db-wal",
        "tsm.db-shm",
        "tsmd.lock",
        "tsmd.pid",
        "tsmd.sock",
        "tsmd.log",
    } <= set(files)
    assert {name: m for name, m in files.items() if m != 0o600} == {}


def daemon_run(h: Harness) -> subprocess.CompletedProcess[str]:
    """`tsm daemon` in the foreground; it must refuse and exit, not serve."""
    return subprocess.run(
        [sys.executable, "-m", "tsm", "daemon", "--no-watch"],
        cwd=h.root,
        env=h.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("planted", ["logs/tsmd.log", "tsmd.lock", "logs"])
def test_the_daemon_refuses_a_planted_link(h: Harness, victim: Path, planted: str) -> None:
    (h.state / "logs").mkdir(exist_ok=True)
    if planted == "logs":
        os.rmdir(h.state / "logs")
        (h.state / "logs").symlink_to(victim.parent)
    else:
        (h.state / planted).unlink(missing_ok=True)
        (h.state / planted).symlink_to(victim.parent / "new.txt")  # dangling: O_CREAT bait
    done = daemon_run(h)
    assert done.returncode == 2, done.stderr
    assert "refusing" in done.stderr and "Traceback" not in done.stderr
    assert not h.socket.exists()
    assert_untouched(victim)


def test_a_planted_pid_link_is_replaced_not_followed(h: Harness, victim: Path) -> None:
    (h.state / "tsmd.pid").symlink_to(victim)
    h.start("--no-watch")
    assert not (h.state / "tsmd.pid").is_symlink()
    assert int((h.state / "tsmd.pid").read_text()) == h.proc.pid  # type: ignore[union-attr]
    assert_untouched(victim)


@pytest.mark.parametrize("planted", ["tsmd.spawn.lock", "logs/tsmd.stderr.log"])
def test_tsm_start_refuses_a_planted_link(h: Harness, victim: Path, planted: str) -> None:
    (h.state / "logs").mkdir(exist_ok=True)
    (h.state / planted).symlink_to(victim)
    done = h.cli("start", "-f", "json", timeout=120)
    assert done.code == 2, done.err
    assert "symlink" in done.error()["error"]
    assert_untouched(victim)


def test_log_records_stay_on_their_lines(tmp_path_factory: pytest.TempPathFactory) -> None:
    """An index root whose name holds a newline, a carriage return and an ANSI escape: the
    daemon logs the root at start-up; no forged line, no raw escape reaches the log."""
    h = Harness()
    try:
        hostile = h.dir / "v\nFORGED 2099-01-01 ERROR injected\x1b]0;owned\x07\r"
        h.root.rename(hostile)
        h.root, h.state = hostile, hostile / ".tsm"
        h.socket = h.state / "tsmd.sock"
        h.env.update(NO_MODEL, TSM_INDEX_ROOT=str(hostile))
        h.start("--no-watch")
        raw = (h.state / "logs" / "tsmd.log").read_bytes()
        assert b"\x1b" not in raw and b"\r" not in raw and b"\x07" not in raw
        lines = raw.decode().splitlines()
        assert lines and all(re.match(r"\d{4}-\d\d-\d\d ", line) for line in lines), lines
        assert any("v\\nFORGED" in line for line in lines)
    finally:
        h.close()


FAKE_DAEMON = textwrap.dedent("""\
    import os, socket, sys
    path, uid = sys.argv[1], int(sys.argv[2])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)
    os.setuid(uid)  # SO_PEERCRED reports the credentials in force at listen()
    listener.listen(8)
    print("listening", flush=True)
    while True:
        conn, _ = listener.accept()
        conn.settimeout(2)
        try:
            data = conn.recv(65536)
        except OSError:
            data = b""
        print("received", len(data), flush=True)
        conn.close()
    """)


@root_only
def test_a_client_never_talks_to_another_users_daemon(h: Harness) -> None:
    """Another user's process listening on tsmd.sock (a shared state dir): searches run
    in-process, the impostor receives nothing, and status and doctor say why."""
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE_DAEMON, str(h.socket), str(NOBODY)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.stdout is not None and fake.stdout.readline() == "listening\n"
        search = h.cli("search", "-f", "json", "--fts-only", "install git", timeout=120)
        assert search.code == 0, search.err
        assert search.json()["results"]
        status = h.cli("status", "-f", "json", timeout=120)
        assert status.code == 0 and status.json()["daemon"]["state"] == "foreign"
        assert f"uid {NOBODY}" in status.err
        doctor = h.cli("doctor", "-f", "json", timeout=120)
        items = [i for s in doctor.json()["sections"] for i in s["items"]]
        assert any(i["status"] == "warn" and f"uid {NOBODY}" in i["message"] for i in items)
        assert h.cli("stop", "-f", "json").json()["was"] == "foreign"
        assert fake.poll() is None  # `tsm stop` did not signal another user's process
    finally:
        fake.kill()
        out, _ = fake.communicate(timeout=10)
    received = [int(line.split()[1]) for line in out.splitlines() if line.startswith("received")]
    assert sum(received) == 0, f"the impostor was sent {received} bytes"


@root_only
def test_the_daemon_refuses_a_client_of_another_user(daemon: Harness) -> None:
    for folder in (daemon.dir, daemon.root, daemon.state):  # let uid 65534 reach the socket
        folder.chmod(0o711)
    daemon.socket.chmod(0o666)
    probe = textwrap.dedent(f"""\
        import json, os, socket
        os.setuid({NOBODY})
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect({str(daemon.socket)!r})
        body = json.dumps({{"v": 2, "op": "ping", "args": {{}}}}).encode()
        try:
            s.sendall(len(body).to_bytes(4, "big") + body)
        except BrokenPipeError:
            pass  # the daemon may refuse and close before reading: its reply is still here
        n = int.from_bytes(s.recv(4), "big")
        data = b""
        while len(data) < n:
            data += s.recv(n - len(data))
        print(json.loads(data)["error"]["kind"])
        """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "permission_denied", done.stderr
    wait_for(
        lambda: "refused a connection from uid" in (daemon.state / "logs" / "tsmd.log").read_text(),
        10,
        "the refusal in the log",
    )


def test_socket_is_not_reachable_through_a_planted_socket_link(h: Harness, victim: Path) -> None:
    """A socket name that is a symlink is removed as stale and bound afresh."""
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    target = victim.parent / "other.sock"
    other.bind(str(target))
    h.socket.symlink_to(target)
    try:
        h.start("--no-watch")
        assert stat.S_ISSOCK(os.lstat(h.socket).st_mode)
        assert h.answers()
    finally:
        other.close()
