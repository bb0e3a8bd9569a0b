"""A broken index is reported, never taken for an empty one: a zero-byte,
truncated or garbage DB makes every command exit 2 with a message that names the file and
offers `tsm rebuild`; `doctor` says the same and exits 2; a full disk is its own message."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

COMMANDS = [
    ("search", "install git"),
    ("list",),
    ("tags",),
    ("status",),
    ("info", "notes/git-install.md"),
    ("get", "1"),
    ("index",),
]


def damage(db: Path, how: str) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    data = db.read_bytes()
    if how == "zero bytes":
        db.write_bytes(b"")
    elif how == "truncated":
        db.write_bytes(data[: len(data) // 3])
    else:
        db.write_bytes(b"\x00garbage\xff" * (len(data) // 10))


@pytest.mark.parametrize("how", ["zero bytes", "truncated", "garbage"])
def test_a_broken_db_is_a_system_error_naming_the_file(indexed: Path, tsm: Any, how: str) -> None:
    db = indexed / ".tsm" / "tsm.db"
    tsm("stop")  # no daemon holds the old file open
    damage(db, how)
    broken = db.read_bytes()
    for command in COMMANDS:
        result = tsm(*command, "-f", "json")
        assert result.code == 2, (command, result.err)
        error = result.error()
        assert error["kind"] == "system_error", (command, error)
        assert str(db) in error["error"] and "tsm rebuild --apply" in error["error"]
        human = tsm(*command, "-f", "human")
        assert human.code == 2 and human.err.startswith("tsm: error: ")
        assert "Traceback" not in human.err and "unexpected" not in human.err
    assert db.read_bytes() == broken  # nothing quietly turned it into an empty index

    doctor = tsm("doctor", "-f", "json")
    assert doctor.code == 2, doctor.err
    report = doctor.json()
    integrity = report["sections"][0]["items"][0]
    assert integrity["status"] == "error" and str(db) in integrity["message"]
    assert "tsm rebuild --apply" in integrity["fix"] and report["error_count"] >= 1
    assert doctor.error()["kind"] == "system_error"
    human = tsm("doctor", "-f", "human")
    assert human.code == 2 and "ERROR integrity" in human.out and "rebuild" in human.out


def test_doctor_exits_0_on_a_sound_index(indexed_read_only: Path, tsm: Any) -> None:
    result = tsm("doctor", "-f", "json")
    assert result.code == 0, result.out
    assert result.json()["error_count"] == 0


def test_a_full_disk_while_indexing_is_its_own_clear_error(indexed: Path, tsm: Any) -> None:
    db = indexed / ".tsm" / "tsm.db"
    for i in range(40):
        (indexed / "notes" / f"bulk-{i}.md").write_text(
            f"# Bulk {i}\n\n" + "words to fill the index with enough text " * 60
        )

    def limit_files() -> None:  # no file may grow: the disk has no room left
        size = (
            db.stat().st_size + os.stat(f"{db}-wal").st_size
            if Path(f"{db}-wal").exists()
            else db.stat().st_size
        )
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    proc = subprocess.run(
        [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        preexec_fn=limit_files,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    message = proc.stderr.strip().splitlines()[-1]
    assert "unexpected" not in message and "report it" not in message, message
    assert f"cannot write the index at {db}" in message and "disk may be full" in message
    assert tsm("search", "install git", "-f", "json").code == 0  # the index still works
