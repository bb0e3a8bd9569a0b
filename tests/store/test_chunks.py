"""Chunk → document rows (store/chunks.py) on a real temp index: what search/chunkmap.py
loads whole and patches from the change log."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note, chunk_ids
from tsm.store import chunks
from tsm.store.connect import Transaction
from tsm.store.documents import delete_document


def test_max_chunk_id_is_zero_without_chunks(db: sqlite3.Connection) -> None:
    assert chunks.max_chunk_id(db) == 0
    a = add_note(db, "a.md", ["one", "two", "three"])
    assert chunks.max_chunk_id(db) == max(chunk_ids(db, a))


def test_chunk_document_pairs_every_chunk(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["one", "two"])
    b = add_note(db, "b.md", ["three"])
    expected = {(c, a) for c in chunk_ids(db, a)} | {(c, b) for c in chunk_ids(db, b)}
    pairs = list(chunks.chunk_document_pairs(db))
    assert len(pairs) == 3 and set(pairs) == expected


def test_documents_of_chunks_in_batches_skipping_deleted_chunks(db: sqlite3.Connection) -> None:
    big = add_note(db, "big.md", [f"body {i}" for i in range(1200)])  # three batches
    small = add_note(db, "small.md", ["one", "two"])
    gone = add_note(db, "gone.md", ["three"])
    gone_chunks = chunk_ids(db, gone)
    with Transaction(db):
        delete_document(db, gone)
    wanted = chunk_ids(db, big) + chunk_ids(db, small) + gone_chunks
    rows = chunks.documents_of_chunks(db, wanted)
    assert all(isinstance(r, chunks.ChunkDocument) for r in rows)
    assert sorted((r.chunk_id, r.document_id) for r in rows) == sorted(
        [(c, big) for c in chunk_ids(db, big)] + [(c, small) for c in chunk_ids(db, small)]
    )
    assert chunks.documents_of_chunks(db, []) == []


def test_count_every_chunk_of_every_document(db: sqlite3.Connection) -> None:
    assert chunks.count(db) == 0
    add_note(db, "a.md", ["one", "two", "three"])
    gone = add_note(db, "b.md", ["four", "five"])
    assert chunks.count(db) == 5
    with Transaction(db):
        delete_document(db, gone)
    assert chunks.count(db) == 3
