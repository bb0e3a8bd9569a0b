"""Transactions grouped into one (store/connect.grouped): what another connection sees, when
the group commits, and what a failing part keeps or undoes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tsm.store.connect import Transaction, grouped, open_db

pytestmark = pytest.mark.sqlite_only("groups SQLite transactions; PostgreSQL keeps its own")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    open_db(tmp_path / "tsm.db", create=True).close()
    return tmp_path / "tsm.db"


@pytest.fixture
def writer(path: Path) -> Iterator[sqlite3.Connection]:
    conn = open_db(path)
    yield conn
    conn.close()


@pytest.fixture
def reader(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None)
    yield conn
    conn.close()


def _write(conn: sqlite3.Connection, key: str) -> None:
    with Transaction(conn):
        conn.execute("INSERT INTO meta(key, value) VALUES (?, 'x')", (key,))


def _seen(reader: sqlite3.Connection) -> list[str]:
    return [r[0] for r in reader.execute("SELECT key FROM meta WHERE key LIKE 't%' ORDER BY key")]


def test_a_group_commits_its_transactions_together(
    writer: sqlite3.Connection, reader: sqlite3.Connection
) -> None:
    with grouped(writer, seconds=3600):
        for key in ("t1", "t2", "t3"):
            _write(writer, key)
            assert _seen(reader) == []  # nothing committed yet
        assert writer.in_transaction
    assert not writer.in_transaction
    assert _seen(reader) == ["t1", "t2", "t3"]


def test_a_group_commits_once_its_time_is_up(
    writer: sqlite3.Connection, reader: sqlite3.Connection
) -> None:
    with grouped(writer, seconds=0):
        _write(writer, "t1")
        assert _seen(reader) == ["t1"]
        _write(writer, "t2")
        assert _seen(reader) == ["t1", "t2"]


def test_a_part_that_wrote_nothing_before_failing_keeps_the_group(
    writer: sqlite3.Connection, reader: sqlite3.Connection
) -> None:
    with grouped(writer, seconds=3600):
        _write(writer, "t1")
        with pytest.raises(LookupError), Transaction(writer):
            raise LookupError("the file changed: read it again")
        _write(writer, "t2")
    assert _seen(reader) == ["t1", "t2"]


def test_a_part_that_failed_after_writing_undoes_the_group(
    writer: sqlite3.Connection, reader: sqlite3.Connection
) -> None:
    with pytest.raises(LookupError), grouped(writer, seconds=3600):
        _write(writer, "t1")
        with Transaction(writer):
            writer.execute("INSERT INTO meta(key, value) VALUES ('t2', 'half')")
            raise LookupError("a bug halfway through a document")
    assert not writer.in_transaction
    assert _seen(reader) == []  # no half document: the group went with it


def test_an_interrupted_group_keeps_its_whole_parts(
    writer: sqlite3.Connection, reader: sqlite3.Connection
) -> None:
    with pytest.raises(KeyboardInterrupt), grouped(writer, seconds=3600):
        _write(writer, "t1")
        raise KeyboardInterrupt  # between two documents, as Ctrl-C comes
    assert _seen(reader) == ["t1"]


def test_a_transaction_outside_a_group_commits_at_once(
    writer: sqlite3.Connection, reader: sqlite3.Connection
) -> None:
    with grouped(writer, seconds=3600):
        pass
    _write(writer, "t1")
    assert not writer.in_transaction
    assert _seen(reader) == ["t1"]
