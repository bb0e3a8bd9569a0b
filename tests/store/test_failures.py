"""store/failures.py: real SQLite and OS errors become one clear line naming the file, each
class with its own message. Running as root ignores file modes, so the
read-only case opens the DB read-only instead of chmod-ing it."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from tsm.errors import IndexCorrupt, StorageFailure
from tsm.store.connect import open_db
from tsm.store.failures import translate


def error_of(action) -> sqlite3.Error:  # type: ignore[no-untyped-def]
    with pytest.raises(sqlite3.Error) as info:
        action()
    return info.value


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "tsm.db"
    open_db(path, create=True).close()
    return path


def test_disk_full(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA max_page_count = 40")  # SQLite's own way to make SQLITE_FULL
    exc = error_of(
        lambda: conn.executemany(
            "INSERT INTO meta VALUES (?, ?)", [(str(i), "x" * 4000) for i in range(100)]
        )
    )
    error = translate(exc, db)
    assert isinstance(error, StorageFailure) and error.exit_code == 2
    assert error.message.startswith("the disk is full") and str(db) in error.message


def test_read_only(db: Path) -> None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    exc = error_of(lambda: conn.execute("INSERT INTO meta VALUES ('a', 'b')"))
    error = translate(exc, db)
    assert isinstance(error, StorageFailure) and "read-only" in error.message
    assert str(db.parent) in (error.hint or "")


def test_locked(db: Path) -> None:
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer that does not let go
    other = sqlite3.connect(db, timeout=0, isolation_level=None)
    exc = error_of(lambda: other.execute("BEGIN IMMEDIATE"))
    error = translate(exc, db)
    assert isinstance(error, StorageFailure) and "locked by another process" in error.message
    holder.execute("ROLLBACK")


def test_cannot_open(tmp_path: Path) -> None:
    exc = error_of(lambda: sqlite3.connect(tmp_path / "no" / "such" / "dir.db"))
    error = translate(exc, tmp_path / "no" / "such" / "dir.db")
    assert isinstance(error, StorageFailure) and error.message.startswith("cannot open")


def test_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(b"garbage " * 1000)
    exc = error_of(lambda: sqlite3.connect(path).execute("SELECT * FROM sqlite_master"))
    error = translate(exc, path)
    assert isinstance(error, IndexCorrupt) and "rebuild" in (error.hint or "")


def test_os_errors_and_others() -> None:
    full = translate(OSError(errno.ENOSPC, "No space left on device", "/x/tsm.db.bak"))
    assert isinstance(full, StorageFailure) and "disk is full" in full.message
    assert "/x/tsm.db.bak" in full.message
    assert translate(ValueError("a bug")) is None  # stays an unexpected error


def test_zero_byte_db_is_corrupt_even_when_creating(tmp_path: Path) -> None:
    path = tmp_path / "tsm.db"
    path.write_bytes(b"")
    for create in (False, True):
        with pytest.raises(IndexCorrupt, match="empty"):
            open_db(path, create=create)
    assert path.read_bytes() == b""
