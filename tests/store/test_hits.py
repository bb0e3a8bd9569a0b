"""What a search reads for its results (store/hits.py) on a real temp index: document rows in
batches, passages, chunk counts, sorted tags and full text, by id."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note, chunk_ids
from tsm.store import hits, keywords
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


def test_hit_rows_a_page_in_one_read(db: sqlite3.Connection) -> None:
    """Passages and the lines they start on, chunk counts, sorted tags, whole texts only
    where asked, and the answer to each keyword condition, for the chunks asked about."""
    a = add_note(db, "a.md", ["first part", "second part"], tags=["zebra", "apple", "mango"])
    b = add_note(db, "b.md", ["else"], tags=["kiwi"])
    c = add_note(db, "c.md", ["five", "six"])
    wanted = [chunk_ids(db, a)[1], chunk_ids(db, b)[0], chunk_ids(db, c)[0]]
    part = keywords.chunk_condition(db, '"part"')
    assert part is not None
    found = hits.hit_rows(db, wanted, content_of=[a], conditions=[part])
    assert found[wanted[0]] == hits.HitRow(
        wanted[0], a, 1, "", None, 2, "second part", 2,
        ("apple", "mango", "zebra"), "first part\nsecond part", (True,),
    )  # fmt: skip
    assert (found[wanted[1]].tags, found[wanted[1]].content) == (("kiwi",), None)
    assert (found[wanted[2]].total_chunks, found[wanted[2]].tags) == (2, ())
    assert found[wanted[1]].matches == found[wanted[2]].matches == (False,)
    assert hits.hit_rows(db, []) == {}
