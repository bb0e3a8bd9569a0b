"""match_expression makes FTS5 syntax plain text, proven against a real FTS5 table; fts_hits
returns the best chunk per document, with and without filters."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tsm.models import Chunk, Document, Section
from tsm.search.fts import fts_hits, fts_ranking, match_expression, quote_term
from tsm.store.connect import Transaction, open_db
from tsm.store.documents import ChunkRow, write_document

ROWS = {
    1: "and or not near are plain words here",
    2: "foo",
    3: "foobar",
    4: "title: secret",
    5: "bar baz",
    6: 'a"b quote',
    7: "start here",
    8: "near a b",
    9: "狩猟 免許",
    10: "c++ and c#",
}


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    # Same tokenizer as the real chunks_fts table (store/migrations.py).
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(title, body, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    conn.executemany("INSERT INTO t(rowid, title, body) VALUES (?, '', ?)", ROWS.items())
    yield conn
    conn.close()


def matches(conn: sqlite3.Connection, terms: list[str]) -> list[int]:
    expr = match_expression(terms)
    assert expr is not None
    return [
        r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", (expr,))
    ]


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        # Operators are words, matched case-insensitively as the text they are.
        ("AND", [1, 10]),
        ("OR", [1]),
        ("NOT", [1]),
        ("NEAR", [1, 8]),
        # Syntax characters around words do not change what the word matches.
        ("foo*", [2]),  # no prefix query: "foobar" is not found
        ("-bar", [5]),  # no negation
        ("title:secret", [4]),  # no column filter: the phrase "title secret"
        ("^start", [7]),  # no initial-token anchor (and "start here" is found anyway)
        ('a"b', [6, 8]),  # the phrase "a b"
        ("(foo)", [2]),
        ("NEAR(a b)", [8]),
        ("{title}: secret", [4]),  # a column filter would search the empty titles instead
        ("狩猟", [9]),
    ],
)
def test_syntax_is_plain_text(fts: sqlite3.Connection, term: str, expected: list[int]) -> None:
    assert matches(fts, [term]) == expected


@pytest.mark.parametrize(
    "term",
    ['"', "*", "-", "(", ")", ":", "^", "+", "{", "}", '""', "NEAR/2", "*foo", "a:b:c"],
)
def test_bare_syntax_characters_never_raise(fts: sqlite3.Connection, term: str) -> None:
    matches(fts, [term])  # an FTS5 syntax error would raise sqlite3.OperationalError
    matches(fts, [term, "foo"])
    assert 2 in matches(fts, ["foo", term])


def test_terms_are_ored(fts: sqlite3.Connection) -> None:
    assert match_expression(["foo", "AND", "bar"]) == '"foo" OR "AND" OR "bar"'
    assert matches(fts, ["foo", "AND", "bar"]) == [1, 2, 5, 10]


def test_quote_term_doubles_quotes() -> None:
    assert quote_term('say "hi"') == '"say ""hi"""'


@pytest.mark.parametrize("terms", [[], [""], ["  ", "\t"]])
def test_empty_input_gives_none(terms: list[str]) -> None:
    assert match_expression(terms) is None


def test_blank_terms_are_skipped() -> None:
    assert match_expression(["", "foo", " "]) == '"foo"'


# --- fts_hits on the real schema --------------------------------------------------------------


def add_document(conn: sqlite3.Connection, path: str, bodies: list[str]) -> int:
    doc = Document(
        path=path,
        type="markdown",
        title=path,
        text="\n".join(bodies),
        sections=tuple(Section("", b) for b in bodies),
    )
    rows = [
        ChunkRow(
            Chunk(i, "", b), fts_title="", fts_section="", fts_body=b, embed_hash=f"{path}-{i}"
        )
        for i, b in enumerate(bodies)
    ]
    with Transaction(conn):
        return write_document(
            conn, doc, rows, content_hash=path, size=1, mtime=0.0, category="note", fts_tags=""
        )


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = open_db(tmp_path / "tsm.db", create=True)
    yield conn
    conn.close()


def test_fts_hits_best_chunk_per_document(db: sqlite3.Connection) -> None:
    a = add_document(db, "a.md", ["deer", "deer deer deer trap", "nothing"])
    b = add_document(db, "b.md", ["a deer once in a long long long sentence about other things"])
    add_document(db, "c.md", ["no match"])
    expr = match_expression(["deer", "trap"])
    assert expr is not None
    for where in ("1", "d.path <> 'zzz'"):
        hits, total = fts_hits(db, expr, where, (), limit=10)
        assert total == 2
        assert [h[1] for h in hits] == [a, b]
        best_chunk = db.execute(
            "SELECT id FROM chunks WHERE document_id = ? AND chunk_index = 1", (a,)
        ).fetchone()[0]
        assert hits[0][0] == best_chunk
        assert hits[0][2] > hits[1][2] > 0  # positive scores, best first


def test_fts_hits_limit_and_total(db: sqlite3.Connection) -> None:
    ids = [add_document(db, f"n{i}.md", ["deer"] * (i + 1)) for i in range(5)]
    expr = match_expression(["deer"])
    assert expr is not None
    for where, params in (("1", ()), ("d.id > ?", (0,))):
        hits, total = fts_hits(db, expr, where, params, limit=2)
        assert len(hits) == 2 and total == 5
        assert len({h[1] for h in hits}) == 2
        assert {h[1] for h in hits} <= set(ids)


def test_fts_hits_filter_applies(db: sqlite3.Connection) -> None:
    add_document(db, "keep/a.md", ["deer"])
    add_document(db, "drop/b.md", ["deer"])
    expr = match_expression(["deer"])
    assert expr is not None
    hits, total = fts_hits(db, expr, "d.path LIKE ?", ("keep/%",), limit=10)
    paths = [
        db.execute("SELECT path FROM documents WHERE id = ?", (h[1],)).fetchone()[0] for h in hits
    ]
    assert (paths, total) == (["keep/a.md"], 1)


def test_fts_ranking_is_fts_hits_without_the_count(db: sqlite3.Connection) -> None:
    """A ranking whose count nobody reads (the bridge's) reads the index once: the same hits
    as fts_hits, without the statement that counts every match."""
    for i in range(5):
        add_document(db, f"n{i}.md", ["deer"] * (i + 1))
    expr = match_expression(["deer"])
    assert expr is not None
    for where, params in (("1", ()), ("d.id > ?", (0,))):
        sent: list[str] = []
        db.set_trace_callback(sent.append)
        ranked = fts_ranking(db, expr, where, params, limit=2)
        db.set_trace_callback(None)
        assert ranked == fts_hits(db, expr, where, params, limit=2)[0]
        assert len([sql for sql in sent if not sql.startswith("--")]) == 1, sent
