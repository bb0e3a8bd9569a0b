"""After a run of writes, SQLite's keyword index is merged into one segment once the
segments the run added hold a tenth of its pages (store/sqlite/keywords.settle): a search
looks each term up in every segment, and a page's term coverage does so for each of its
chunks. A run of a few files leaves its small segments for later. Rankings are FTS5's
either way."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note
from tsm.store import keywords
from tsm.store.connect import grouped

EVEN = (1.0, 1.0, 1.0, 1.0)


def segments(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def ranking(conn: sqlite3.Connection) -> list[tuple[int, int, float]]:
    return [tuple(r) for r in keywords.best_chunks(conn, '"lantern" OR "door"', EVEN, 100)]


def test_a_run_of_many_commits_leaves_one_segment_with_the_same_ranking(
    db: sqlite3.Connection,
) -> None:
    for n in range(12):  # a commit each, as `tsm index` commits a large vault in groups
        add_note(db, f"n{n}.md", [f"lantern {n} " + "door " * (n % 5), f"other words {n}"])
    assert segments(db) == 12
    before = ranking(db)
    keywords.settle(db)
    assert segments(db) == 1
    assert ranking(db) == before
    assert keywords.document_frequency(db, '"lantern"') == 12


def test_a_few_files_added_to_a_large_index_wait(db: sqlite3.Connection) -> None:
    with grouped(db):  # one commit: one large segment
        for n in range(400):
            add_note(db, f"big{n}.md", [" ".join(f"word{n * 7 + i}" for i in range(60))])
    keywords.settle(db)
    assert segments(db) == 1
    for n in range(3):
        add_note(db, f"n{n}.md", [f"lantern {n}"])
    assert segments(db) == 4
    keywords.settle(db)
    assert segments(db) == 4
