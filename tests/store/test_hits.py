"""What a search reads for its results (store/hits.py) on a real temp index: document rows in
batches, passages, chunk counts, sorted tags and full text, by id."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note, chunk_ids
from tsm.store import hits
from tsm.store.connect import Transaction
from tsm.store.documents import delete_document


def test_documents_by_id_in_batches_named_skipping_deleted(db: sqlite3.Connection) -> None:
    ids = [add_note(db, f"n{i}.md", [f"body {i}"], aliases=[f"a{i}"]) for i in range(1100)]
    gone = ids.pop(7)
    with Transaction(db):
        delete_document(db, gone)
    docs = hits.documents_by_id(db, [*ids, gone])  # three batches of ids
    assert sorted(docs) == sorted(ids)
    doc = docs[ids[1050]]
    assert isinstance(doc, hits.ResultDocument)
    assert (doc.id, doc.path, doc.title, doc.type, doc.category) == (
        ids[1050],
        "n1051.md",
        "n1051.md",
        "markdown",
        "note",
    )
    assert (doc.status, doc.created, doc.updated, doc.doc_date) == (None, None, None, None)
    assert (doc.size, doc.mtime, doc.aliases) == (1, 0.0, '["a1051"]')
    assert hits.documents_by_id(db, []) == {}


def test_chunks_by_id_the_passages_asked_for(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["first", "second", "third"])
    b = add_note(db, "b.md", ["other"])
    wanted = [chunk_ids(db, a)[2], chunk_ids(db, b)[0]]
    found = hits.chunks_by_id(db, wanted)
    assert found == {
        wanted[0]: hits.ResultChunk(wanted[0], 2, "", None, "third"),
        wanted[1]: hits.ResultChunk(wanted[1], 0, "", None, "other"),
    }


def test_chunk_counts_per_document(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["one", "two", "three"])
    b = add_note(db, "b.md", ["four"])
    c = add_note(db, "c.md", ["five", "six"])
    assert hits.chunk_counts(db, [a, b]) == {a: 3, b: 1}
    assert hits.chunk_counts(db, [c, 999]) == {c: 2}


def test_tags_by_document_sorted_absent_without_tags(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["x"], tags=["zebra", "apple", "mango"])
    b = add_note(db, "b.md", ["y"], tags=["kiwi"])
    c = add_note(db, "c.md", ["z"])
    assert hits.tags_by_document(db, [a, b, c]) == {a: ["apple", "mango", "zebra"], b: ["kiwi"]}


def test_document_text_is_the_whole_indexed_text(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["first part", "second part"])
    add_note(db, "b.md", ["else"])
    assert hits.document_text(db, a) == "first part\nsecond part"
