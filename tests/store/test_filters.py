"""The search's filter reads (store/filters.py) and a document's first chunk (store/chunks.py)
on a real temp index."""

from __future__ import annotations

import datetime as dt
import sqlite3

from tests.store.notes import add_note, chunk_ids
from tsm.search.query import Filters
from tsm.store import filters


def _dated(db: sqlite3.Connection, doc_id: int, date: str) -> None:
    db.execute("UPDATE documents SET doc_date = ? WHERE id = ?", (date, doc_id))
    db.commit()


def test_chunk_ids_are_the_chunks_the_filter_lets_through(db: sqlite3.Connection) -> None:
    a = add_note(db, "notes/a.md", ["one", "two"])
    add_note(db, "other/b.md", ["three"])
    c = add_note(db, "notes/sub/c.md", ["four"])
    where, params = filters.filter_sql(Filters(paths=("notes",)))
    assert sorted(filters.chunk_ids(db, where, params)) == sorted(
        chunk_ids(db, a) + chunk_ids(db, c)
    )
    where, params = filters.filter_sql(Filters())
    assert len(list(filters.chunk_ids(db, where, params))) == 4


def test_most_recent_documents_newest_first_with_their_first_chunk(
    db: sqlite3.Connection,
) -> None:
    old = add_note(db, "old.md", ["a", "b"])
    new = add_note(db, "new.md", ["c", "d"])
    mid = add_note(db, "mid.md", ["e"])
    _dated(db, old, "2024-01-01")
    _dated(db, new, "2026-03-01")
    _dated(db, mid, "2025-06-01")
    where, params = filters.filter_sql(Filters())
    assert filters.most_recent(db, where, params, 2) == [
        (new, chunk_ids(db, new)[0]),
        (mid, chunk_ids(db, mid)[0]),
    ]
    where, params = filters.filter_sql(Filters(before=dt.date(2025, 12, 31)))
    assert [d for d, _ in filters.most_recent(db, where, params, 10)] == [mid, old]
