"""The keyword index's statements (store/keywords.py) on a real temp index: best chunk per
document with a filter, the unfiltered best chunks, matching chunk ids and document counts."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note, chunk_ids
from tsm.store import keywords

EVEN = (1.0, 1.0, 1.0, 1.0)  # bm25() weights of (title, section, body, tags)
TAGS_COUNT = (1.0, 1.0, 1.0, 20.0)


def test_best_chunk_per_document_best_first(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["deer", "deer deer deer trap", "nothing"])
    b = add_note(db, "b.md", ["a deer once in a long long long sentence about other things"])
    add_note(db, "c.md", ["no match"])
    rows = keywords.best_chunk_per_document(db, '"deer" OR "trap"', EVEN, "1", (), 10)
    assert [r.document_id for r in rows] == [a, b]
    assert rows[0].chunk_id == chunk_ids(db, a)[1]  # the chunk with most of the words
    assert rows[1].chunk_id == chunk_ids(db, b)[0]
    assert rows[0].rank < rows[1].rank < 0  # bm25(): negative, lower is better
    assert all(isinstance(r, keywords.KeywordMatch) for r in rows)


def test_best_chunk_per_document_filters_on_chunks_and_documents(
    db: sqlite3.Connection,
) -> None:
    keep = add_note(db, "keep/a.md", ["deer", "deer deer"])
    add_note(db, "drop/b.md", ["deer deer deer"])
    rows = keywords.best_chunk_per_document(
        db, '"deer"', EVEN, "d.path LIKE ? AND c.chunk_index = ?", ("keep/%", 0), 10
    )
    assert [(r.chunk_id, r.document_id) for r in rows] == [(chunk_ids(db, keep)[0], keep)]


def test_best_chunk_per_document_limit_and_ties_by_document_id(db: sqlite3.Connection) -> None:
    ids = [add_note(db, f"n{i}.md", ["same words"]) for i in range(4)]
    rows = keywords.best_chunk_per_document(db, '"same"', EVEN, "1", (), 3)
    assert [r.document_id for r in rows] == sorted(ids)[:3]  # equal ranks: by document id


def test_the_weights_reach_bm25(db: sqlite3.Connection) -> None:
    tagged = add_note(db, "tagged.md", ["a note about nothing much at all"], tags=["deer"])
    body = add_note(db, "body.md", ["deer deer deer"])
    for find in (
        lambda w: keywords.best_chunk_per_document(db, '"deer"', w, "1", (), 10),
        lambda w: keywords.best_chunks(db, '"deer"', w, 10),
    ):
        assert [r.document_id for r in find(EVEN)] == [body, tagged]
        assert [r.document_id for r in find(TAGS_COUNT)] == [tagged, body]


def test_best_chunks_are_chunks_not_documents(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["deer deer deer", "deer deer", "nothing"])
    b = add_note(db, "b.md", ["deer and a longer body that dilutes the one match"])
    rows = keywords.best_chunks(db, '"deer"', EVEN, 10)
    assert [(r.chunk_id, r.document_id) for r in rows] == [
        (chunk_ids(db, a)[0], a),
        (chunk_ids(db, a)[1], a),
        (chunk_ids(db, b)[0], b),
    ]
    assert [r.rank for r in rows] == sorted(r.rank for r in rows)
    assert keywords.best_chunks(db, '"deer"', EVEN, 2) == rows[:2]


def test_best_chunks_ties_by_document_id(db: sqlite3.Connection) -> None:
    ids = [add_note(db, f"n{i}.md", ["same words"]) for i in range(3)]
    assert [r.document_id for r in keywords.best_chunks(db, '"same"', EVEN, 10)] == ids


def test_matching_chunk_ids_every_match_unranked(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["deer", "nothing", "deer again"])
    b = add_note(db, "b.md", ["deer"])
    add_note(db, "c.md", ["nothing"])
    found = sorted(keywords.matching_chunk_ids(db, '"deer"'))
    assert found == sorted([chunk_ids(db, a)[0], chunk_ids(db, a)[2], chunk_ids(db, b)[0]])
    assert list(keywords.matching_chunk_ids(db, '"absent"')) == []


def test_count_matching_documents_counts_documents_that_pass(db: sqlite3.Connection) -> None:
    add_note(db, "keep/a.md", ["deer", "deer again"])  # two chunks, one document
    add_note(db, "keep/b.md", ["deer"])
    add_note(db, "drop/c.md", ["deer"])
    add_note(db, "keep/d.md", ["nothing"])
    assert keywords.count_matching_documents(db, '"deer"', "1", ()) == 3
    assert keywords.count_matching_documents(db, '"deer"', "d.path LIKE ?", ("keep/%",)) == 2
    assert keywords.count_matching_documents(db, '"absent"', "1", ()) == 0


def test_document_frequency_counts_matching_chunks_not_documents(db: sqlite3.Connection) -> None:
    add_note(db, "a.md", ["deer", "deer trap", "nothing"])
    add_note(db, "b.md", ["a deer", "other"], tags=["trap"])
    assert keywords.document_frequency(db, '"deer"') == 3
    assert keywords.document_frequency(db, '"trap"') == 3  # b's tags are in each of its chunks
    assert keywords.document_frequency(db, '"deer" "trap"') == 2
    assert keywords.document_frequency(db, '"absent"') == 0


def test_matching_among_only_the_given_chunks(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["deer", "deer trap", "nothing"])
    b = add_note(db, "b.md", ["a deer", "other"])
    given = [chunk_ids(db, a)[1], chunk_ids(db, a)[2], chunk_ids(db, b)[0]]
    assert sorted(keywords.matching_among(db, '"deer"', given)) == sorted(
        [chunk_ids(db, a)[1], chunk_ids(db, b)[0]]
    )
    assert list(keywords.matching_among(db, '"trap"', given)) == [chunk_ids(db, a)[1]]
    assert list(keywords.matching_among(db, '"absent"', given)) == []
