"""Background embedding after a full disk: the vectors' write fails, space comes back, and
the vectors arrive with no new write to wake the backfill."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from daemon_harness import Harness, wait_for

EMBED_DEADLINE = 300  # the backfill worker loads a second copy of the model; then retries
FAIL_DEADLINE = 300


def add_notes_without_vectors(h: Harness, count: int = 12) -> None:
    """Chunks for the backfill: indexed in-process with --no-embed, before the daemon runs."""
    folder = h.root / "notes" / "herons"
    folder.mkdir()
    for i in range(count):
        (folder / f"heron{i:02d}.md").write_text(
            f"# Heron {i}\n\n" + f"The grey heron {i} waits in the shallows for fish.\n\n" * 12,
            encoding="utf-8",
        )
    result = h.cli("index", "notes/herons", "--no-embed", "-f", "json")
    assert result.code == 0, result.err
    assert missing_vectors(h) > 0


def missing_vectors(h: Harness) -> int:
    return int(h.status()["chunks_without_vectors"])


def backfill_state(h: Harness) -> str:
    return str(h.status()["queue"]["backfill"]["state"])


def backfill_failure(h: Harness) -> str | None:
    """The backfill's error while it is in that state (one status: it retries meanwhile)."""
    backfill = h.status()["queue"]["backfill"]
    return str(backfill["detail"]) if backfill["state"] == "error" else None


class Tmpfs:
    """The index on a tmpfs mount filled up by a filler file (root only)."""

    def __init__(self, h: Harness) -> None:
        self.mount = h.dir / "small"
        self.mount.mkdir()
        db = h.state / "tsm.db"
        size = db.stat().st_size + 4 * 1024 * 1024
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.mount)],
            capture_output=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
        shutil.copy(db, self.mount / "tsm.db")
        h.env["TSM_DB_PATH"] = str(self.mount / "tsm.db")
        self.filler = self.mount / "filler"

    def fill(self) -> None:
        """Fill the mount but for 64 KB: the daemon opens the index (its -shm file), and a
        batch of vectors no longer fits."""
        with open(self.filler, "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
            fh.truncate(max(0, fh.tell() - 65536))

    def free(self) -> None:
        self.filler.unlink()

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.mount)], capture_output=True)


@pytest.fixture
def tmpfs(harness: Harness) -> Iterator[Tmpfs]:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux")
    disk = Tmpfs(harness)
    yield disk
    harness.stop()
    disk.close()


def test_vectors_arrive_once_a_full_tmpfs_has_room_again(harness: Harness, tmpfs: Tmpfs) -> None:
    add_notes_without_vectors(harness)
    tmpfs.fill()
    harness.start("--no-watch")  # nothing but the backfill writes
    detail = wait_for(lambda: backfill_failure(harness), FAIL_DEADLINE, "the write to fail")
    assert "full" in detail, detail
    assert missing_vectors(harness) > 0
    tmpfs.free()
    wait_for(lambda: missing_vectors(harness) == 0, EMBED_DEADLINE, "the vectors", interval=1)
    assert backfill_state(harness) == "idle"


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs prlimit(2)")
def test_vectors_arrive_once_a_file_size_limit_is_lifted(harness: Harness) -> None:
    """The same without root: the daemon may not grow a file past 16 KB (RLIMIT_FSIZE), so
    the WAL cannot take a batch of vectors; the limit lifted is the room come back."""
    add_notes_without_vectors(harness)
    harness.start("--no-watch")
    assert harness.proc is not None
    pid = harness.proc.pid
    # The backfill is woken at start and the model loads first: the limit is in place long
    # before its first write, unless this machine is very slow; then the write succeeded and
    # there is nothing to test.
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (16 * 1024, resource.RLIM_INFINITY))
    wait_for(
        lambda: backfill_failure(harness) or missing_vectors(harness) == 0,
        FAIL_DEADLINE,
        "the write to fail",
    )
    if missing_vectors(harness) == 0:
        pytest.skip("the backfill wrote its vectors before the limit was in place")
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    wait_for(lambda: missing_vectors(harness) == 0, EMBED_DEADLINE, "the vectors", interval=1)
    assert backfill_state(harness) == "idle"
