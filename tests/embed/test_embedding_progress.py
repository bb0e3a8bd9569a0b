"""Progress users can see: `tsm status` shows vectors done/total and the recent embedding rate;
`tsm index` on a terminal draws an embedding bar with a rate and an ETA."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any


def test_status_shows_vectors_done_total_and_rate(vault: Path, tsm: Any) -> None:
    assert tsm("init", "-f", "json", cwd=vault).code == 0
    before = tsm("status", "-f", "json", cwd=vault)
    assert before.code == 0, before.err
    assert before.json()["embed_rate"] is None and before.json()["vectors_done"] == 0
    assert tsm("index", "-f", "json", cwd=vault).code == 0
    status = tsm("status", "-f", "json", cwd=vault).json()
    assert status["vectors_total"] == status["total_chunks"] > 0
    assert status["vectors_done"] == status["vectors_total"]
    assert status["embed_rate"] > 0 and status["embed_rate_at"]
    human = tsm("status", "-f", "human", cwd=vault)
    assert "vectors_done" in human.out.replace(" ", "_") or "vectors done" in human.out


def test_index_on_a_terminal_shows_embedding_progress_with_eta(vault: Path) -> None:
    """The real CLI on a pseudo-terminal: the bar tqdm draws has the chunk count, a rate and
    the remaining time ('<' between elapsed and remaining)."""
    leader, follower = pty.openpty()
    # A terminal 120 columns wide (a fresh pty has none, and tqdm then draws nothing).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = {
        **os.environ,
        "TSM_INDEX_ROOT": str(vault),
        "TSM_EMBED_BATCH": "2",
    }  # several batches: the bar is redrawn with a rate
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "index"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=vault,
        env=env,
    )
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    proc.wait(60)
    os.close(leader)
    text = screen.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    bars = [line for line in text.replace("\r", "\n").splitlines() if line.startswith("embedding")]
    assert bars, text
    assert any("chunk/s" in line and "<" in line for line in bars), bars
