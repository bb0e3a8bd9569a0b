"""`tsm index` waits while another process holds the index's embedding role (a daemon
embedding the same index); on a terminal it says so in a line rather than sitting silent,
then embeds once the role is free. The real CLI, its stderr on a pseudo-terminal."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.patience import scaled


def read_until(fd: int, wanted: str, seconds: float) -> str:
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        seen += chunk
    return seen.decode(errors="replace")


def test_index_says_it_waits_for_the_embedding_role(vault: Path, tsm: Any) -> None:
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    state = vault / ".tsm"
    lock = os.open(state / "embed.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # as a daemon's backfill holds it
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "index", "-f", "human"],
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=vault,
    )
    os.close(slave)
    try:
        said = read_until(master, "waiting for another process", scaled(120))
        assert "tsm: waiting for another process" in said, said
        assert proc.poll() is None  # still waiting: it embeds nothing while the role is held
    finally:
        os.close(lock)  # the role is free
    proc.communicate(timeout=scaled(600))
    os.close(master)
    assert proc.returncode == 0
    status = subprocess.run(
        [sys.executable, "-m", "tsm", "status", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=vault,
        timeout=scaled(300),
    )
    assert json.loads(status.stdout)["chunks_without_vectors"] == 0
