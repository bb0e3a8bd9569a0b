"""The PostgreSQL keyword index (store/pg_keywords.py) against SQLite's FTS5 on the same chunks:
identical matches, identical ranked ids and bm25() ranks, for English, Japanese, mixed text,
phrases, column weights, diacritics, stemming, chunks past PostgreSQL's tsvector limits, and
after deletes. Both stores are real (a temp SQLite file, a database on the run's server) and
written through the store's own write_document."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import pg
from tsm.models import Chunk, Document, Section
from tsm.search.chunkmap import chunk_documents
from tsm.search.fts import COLUMN_WEIGHTS, fts_hits, match_expression, quote_term
from tsm.store import hits, keywords, migrations
from tsm.store.connect import Transaction, open_db
from tsm.store.documents import ChunkRow, delete_document, write_document
from tsm.store.postgres import connection as postgres
from tsm.store.postgres import keywords as pg_keywords
from tsm.text.tokenizer import get_tokenizer

pytestmark = pytest.mark.postgres

# Weights that are multiples of a power of two: FTS5 adds a column's weight once per
# instance, the PostgreSQL index multiplies it by the count, and the two agree to the bit.
WEIGHTS = (COLUMN_WEIGHTS, (1.0, 1.0, 1.0, 1.0), (1.0, 1.0, 1.0, 20.0), (0.5, 0.0, 1.0, 4.0))
EVERYTHING = "1 = 1"

ENGLISH = (
    "run running runs runner ran café cafe CAFÉ Café naïve naive résumé resume boundary layer "
    "layers Boundary-Layer p53 don't snake_case connection connected connecting generalization "
    "general ÅNGSTRÖM angstrom Straße strasse 42 2024 x y z deer trap the of study studies"
).split()
JAPANESE = (
    "境界層の流れは粘性に支配される",
    "東京都に住んでいる研究者が機械学習のモデルを作った",
    "コーヒーを飲みながら論文を読む",
    "走る人と走った人",
)


def _japanese_terms() -> list[str]:
    tokenizer = get_tokenizer()
    return [t for text in JAPANESE for t in tokenizer.index_text(text).split()]


def _words(rng: random.Random, vocabulary: Sequence[str], low: int, high: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(low, high)))


def _corpus(seed: int = 18) -> list[tuple[str, list[tuple[str, str, str]], str]]:
    """(path, chunks as (title, section, body), tags) of a mixed corpus, with the chunks that
    exceed PostgreSQL's tsvector limits: a term 300 times, 17,000 tokens, a 3,000-byte term."""
    rng = random.Random(seed)
    vocabulary = ENGLISH + _japanese_terms()
    docs = []
    for n in range(60):
        title = _words(rng, vocabulary, 0, 4)
        tags = _words(rng, vocabulary, 0, 2)
        chunks = [
            (title, _words(rng, vocabulary, 0, 3), _words(rng, vocabulary, 0, 40))
            for _ in range(rng.randint(1, 4))
        ]
        docs.append((f"{'ab'[n % 2]}/{n}.md", chunks, tags))
    docs.append(("limits/repeat.md", [("", "", "deer " * 300 + "trap deer trap")], ""))
    long_body = " ".join(rng.choice(vocabulary) for _ in range(17_000)) + " boundary layer"
    docs.append(("limits/long.md", [("long", "", long_body)], ""))
    docs.append(("limits/wide.md", [("", "", "x" * 3000 + " deer " + "é" * 1500)], "x" * 2100))
    docs.append(("limits/empty.md", [("", "", "")], ""))
    return docs


def _write(conn: Any, docs: Sequence[tuple[str, list[tuple[str, str, str]], str]]) -> None:
    for path, chunks, tags in docs:
        doc = Document(
            path=path,
            type="markdown",
            title=path,
            text="\n".join(b for _, _, b in chunks),
            sections=tuple(Section(s, b) for _, s, b in chunks),
        )
        rows = [
            ChunkRow(
                Chunk(i, s, b), fts_title=t, fts_section=s, fts_body=b, embed_hash=f"{path}{i}"
            )
            for i, (t, s, b) in enumerate(chunks)
        ]
        with Transaction(conn):
            write_document(
                conn,
                doc,
                rows,
                content_hash=path,
                size=1,
                mtime=0.0,
                category="note",
                fts_tags=tags,
            )


def _delete(conn: Any, paths: Sequence[str]) -> None:
    for path in paths:
        (doc_id,) = conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
        with Transaction(conn):
            delete_document(conn, doc_id)


@pytest.fixture(scope="module")
def both(
    pg_server: pg.PgServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[sqlite3.Connection, Any]]:
    """The corpus indexed in SQLite and in PostgreSQL (same ids), then a few documents
    deleted from both, so the totals have seen deletes too."""
    lite = open_db(tmp_path_factory.mktemp("pgkw") / "tsm.db", create=True)
    with pg.fresh_database(pg_server) as url:
        server = postgres.connect(url)
        migrations.apply(server)
        docs = _corpus()
        for conn in (lite, server):
            _write(conn, docs)
            _delete(conn, ["a/0.md", "b/7.md", "a/12.md"])
        yield lite, server
        server.close()
    lite.close()


def _terms() -> list[str]:
    return ENGLISH + _japanese_terms() + ["missing", "。", "x" * 3000, "é" * 1500, "x" * 2100]


def _phrases() -> st.SearchStrategy[str]:
    words = st.sampled_from(_terms())
    return st.one_of(words, st.lists(words, min_size=2, max_size=3).map(" ".join))


@st.composite
def expressions(draw: st.DrawFn) -> str:
    """What search/fts.py and search/bridge.py write: quoted terms and phrases joined by OR,
    some grouped in parentheses."""
    groups = draw(st.lists(st.lists(_phrases(), min_size=1, max_size=3), min_size=1, max_size=4))
    parts = []
    for group in groups:
        quoted = " OR ".join(quote_term(p) for p in group)
        parts.append(f"({quoted})" if len(group) > 1 or draw(st.booleans()) else quoted)
    return " OR ".join(parts)


def assert_same_ranking(expected: Sequence[Any], got: Sequence[Any]) -> None:
    assert [(m.chunk_id, m.document_id) for m in got] == [
        (m.chunk_id, m.document_id) for m in expected
    ]
    for e, g in zip(expected, got, strict=True):
        assert math.isclose(g.rank, e.rank, rel_tol=1e-9, abs_tol=1e-12), (e, g)


def _compare(lite: sqlite3.Connection, server: Any, expression: str) -> None:
    for weights in WEIGHTS:
        for limit in (3, 40, 1000):
            assert_same_ranking(
                keywords.best_chunks(lite, expression, weights, limit),
                keywords.best_chunks(server, expression, weights, limit),
            )
        for where, params in ((EVERYTHING, ()), ("d.path LIKE ?", ("a/%",))):
            assert_same_ranking(
                keywords.best_chunk_per_document(lite, expression, weights, where, params, 25),
                keywords.best_chunk_per_document(server, expression, weights, where, params, 25),
            )
    assert sorted(keywords.matching_chunk_ids(server, expression)) == sorted(
        keywords.matching_chunk_ids(lite, expression)
    )
    assert keywords.document_frequency(server, expression) == keywords.document_frequency(
        lite, expression
    )
    # Batched as search/coverage.py asks: the expression, each of its phrases alone (one-term
    # phrases go together in one statement on PostgreSQL), a term nothing holds, repeats.
    batch = [
        expression,
        *(quote_term(p) for p in pg_keywords.expression_phrases(expression)),
        '"zzzabsent"',
        expression,
    ]
    assert keywords.document_frequencies(server, batch) == keywords.document_frequencies(
        lite, batch
    )
    among = list(range(1, 200, 3))
    assert sorted(keywords.matching_among(server, expression, among)) == sorted(
        keywords.matching_among(lite, expression, among)
    )
    for where, params in ((EVERYTHING, ()), ("d.path LIKE ?", ("b/%",))):
        assert keywords.count_matching_documents(
            server, expression, where, params
        ) == keywords.count_matching_documents(lite, expression, where, params)
    ranked, matching = keywords.best_chunks_and_matches(server, expression, COLUMN_WEIGHTS, 40)
    assert_same_ranking(keywords.best_chunks(lite, expression, COLUMN_WEIGHTS, 40), ranked)
    assert sorted(matching()) == sorted(keywords.matching_chunk_ids(lite, expression))
    # What search/coverage.py reads in one statement, and what a page of results tests each
    # of its chunks against (store.hits.hit_rows).
    for frequencies in (True, False):
        assert keywords.term_matches(
            server, batch, among, frequencies=frequencies
        ) == keywords.term_matches(lite, batch, among, frequencies=frequencies)
    conditions = [keywords.chunk_condition(c, expression) for c in (lite, server)]
    assert None not in conditions
    assert {
        i: row.matches
        for i, row in hits.hit_rows(lite, among, (), [conditions[0]]).items()  # type: ignore[list-item]
    } == {
        i: row.matches
        for i, row in hits.hit_rows(server, among, (), [conditions[1]]).items()  # type: ignore[list-item]
    }


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(expression=expressions())
def test_same_matches_and_ranks_as_fts5(
    both: tuple[sqlite3.Connection, Any], expression: str
) -> None:
    lite, server = both
    _compare(lite, server, expression)


@pytest.mark.parametrize(
    "query",
    [
        "running cafe",  # stemming and diacritics
        "Café NAÏVE résumé",  # case folding, diacritics removed
        "境界層の流れ",  # Japanese, split by the real tokenizer
        "機械学習 model p53 don't",  # mixed; don't is a phrase of two FTS5 tokens
        "snake_case Boundary-Layer",  # phrases FTS5 makes of one query word
        "deer trap",  # the chunk with a term 302 times
        "boundary layer angstrom",  # and the one of 17,000 tokens
        "missing nowhere",  # nothing matches
    ],
)
def test_queries_of_the_search_engine(both: tuple[sqlite3.Connection, Any], query: str) -> None:
    """The expressions search/engine.py makes of a user's query."""
    expression = match_expression(get_tokenizer().query_terms(query))
    assert expression is not None
    _compare(*both, expression)
    lite, server = both
    assert keywords.best_chunks(lite, expression, COLUMN_WEIGHTS, 5) or query.startswith("missing")


def test_phrases_past_the_tsvector_limits(both: tuple[sqlite3.Connection, Any]) -> None:
    """A phrase at offset 17,000 and a term's 301st instance count, as in FTS5."""
    lite, server = both
    for expression in ('"boundary layer"', '"deer trap"', '"trap deer trap"', '"deer deer"'):
        expected = keywords.best_chunks(lite, expression, COLUMN_WEIGHTS, 10)
        assert expected
        assert_same_ranking(expected, keywords.best_chunks(server, expression, COLUMN_WEIGHTS, 10))


def test_phrase_does_not_span_columns(pg_url: str, tmp_path: Path) -> None:
    """A phrase whose words end one column and begin the next is no match (FTS5's rule)."""
    lite = open_db(tmp_path / "tsm.db", create=True)
    server = postgres.connect(pg_url)
    migrations.apply(server)
    docs = [("a.md", [("boundary", "layer", "layer boundary")], "")]
    for conn in (lite, server):
        _write(conn, docs)
        assert keywords.document_frequency(conn, '"boundary layer"') == 0
        assert keywords.document_frequency(conn, '"layer boundary"') == 1
    server.close()
    lite.close()


def test_totals_follow_inserts_and_deletes_past_folding(pg_url: str, tmp_path: Path) -> None:
    """Over 256 writes the totals' delta rows are folded into one; N and the token total (and
    so every rank) still match FTS5's after inserts, deletes and cascaded deletes."""
    lite = open_db(tmp_path / "tsm.db", create=True)
    server = postgres.connect(pg_url)
    migrations.apply(server)
    rng = random.Random(5)
    docs = [(f"n{i}.md", [("", "", _words(rng, ENGLISH, 1, 12))], "") for i in range(300)]
    for conn in (lite, server):
        _write(conn, docs)
        _delete(conn, [f"n{i}.md" for i in range(0, 300, 7)])
    # A document deleted on its own: its chunks' keyword rows go by cascade, and the totals
    # follow (SQLite has no cascade into FTS5: there the store deletes them itself).
    _delete(lite, ["n1.md", "n2.md"])
    server.execute("DELETE FROM documents WHERE path IN ('n1.md', 'n2.md')")
    rows, tokens = server.execute("SELECT count(*), sum(tokens) FROM chunk_keywords").fetchone()
    assert server.execute("SELECT sum(rows), sum(tokens) FROM keyword_totals").fetchone() == (
        rows,
        tokens,
    )
    assert server.execute("SELECT count(*) FROM keyword_totals").fetchone()[0] < 256
    for expression in ('"run" OR "cafe"', '"deer" OR "boundary layer"', '"study"'):
        _compare(lite, server, expression)
    server.close()
    lite.close()


def test_each_posting_holds_fts5s_own_counts(both: tuple[sqlite3.Connection, Any]) -> None:
    """Every posting's count in each column, and its chunk's token count, are FTS5's for the
    same chunk (fts5vocab over chunks_fts): the server counts them from the stored terms, so
    this covers words of several terms and of none, a term in several columns, terms too
    long for the btree (a digest), a term 300 times, and empty columns."""
    lite, server = both
    lite.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.instances "
        "USING fts5vocab(main, chunks_fts, 'instance')"
    )
    column = {name: n for n, name in enumerate(pg_keywords.COLUMNS)}
    expected: dict[tuple[str, int], list[int]] = {}
    for term, chunk, col in lite.execute("SELECT term, doc, col FROM temp.instances"):
        expected.setdefault((pg_keywords.lexeme(term), chunk), [0] * 4)[column[col]] += 1
    got: dict[tuple[str, int], list[int]] = {}
    tokens: dict[int, set[int]] = {}
    for lexeme, chunk, *counts, n in server.execute(
        "SELECT lexeme, chunk_id, c0, c1, c2, c3, tokens FROM keyword_postings"
    ):
        got[lexeme, chunk] = counts
        tokens.setdefault(chunk, set()).add(n)
    assert got == expected
    per_chunk: dict[int, int] = {}
    for (_, chunk), counts in expected.items():
        per_chunk[chunk] = per_chunk.get(chunk, 0) + sum(counts)
    assert tokens == {chunk: {n} for chunk, n in per_chunk.items()}
    stored = dict(server.execute("SELECT chunk_id, tokens FROM chunk_keywords").fetchall())
    assert {c: n for c, n in stored.items() if n} == per_chunk
    assert any(lexeme.startswith("#") for lexeme, _ in got)  # a digest was counted too


def test_postings_go_with_their_chunk(pg_url: str) -> None:
    """The postings follow their chunk's keyword row (migration m005, no foreign key): a
    document replaced, removed by the store, or deleted outright leaves no posting behind,
    and each remaining chunk keeps one posting per distinct term."""
    server = postgres.connect(pg_url)
    migrations.apply(server)
    rng = random.Random(7)
    docs = [(f"p{i}.md", [("", "", _words(rng, ENGLISH, 3, 12))] * 2, "") for i in range(6)]
    _write(server, docs)
    _write(server, [("p0.md", [("", "", "boundary layer")], "")])  # replaced
    _delete(server, ["p1.md"])  # removed by the store
    server.execute("DELETE FROM documents WHERE path = 'p2.md'")  # its chunks by cascade
    orphans = server.execute(
        """SELECT count(*) FROM keyword_postings p
           WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = p.chunk_id)"""
    ).fetchone()[0]
    assert orphans == 0
    per_row = sum(
        len(set(terms.split())) for (terms,) in server.execute("SELECT terms FROM chunk_keywords")
    )
    assert server.execute("SELECT count(*) FROM keyword_postings").fetchone()[0] == per_row
    assert server.execute("SELECT count(*) FROM chunks").fetchone()[0] == 1 + 3 * 2
    server.close()


def test_each_posting_carries_its_chunks_document(pg_url: str) -> None:
    """A posting carries its chunk's document id (migration m009), which the ranking returns
    without reading `chunks`: right for every posting after writes, a replaced document (new
    chunks, new ids) and removals, and what best_chunks returns."""
    server = postgres.connect(pg_url)
    migrations.apply(server)
    rng = random.Random(8)
    docs = [(f"q{i}.md", [("", "", _words(rng, ENGLISH, 3, 12))] * 3, "") for i in range(5)]
    _write(server, docs)
    _write(server, [("q0.md", [("deer", "", "boundary layer")] * 2, "")])  # replaced
    _delete(server, ["q1.md"])
    wrong = server.execute(
        """SELECT count(*) FROM keyword_postings p LEFT JOIN chunks c ON c.id = p.chunk_id
           WHERE c.document_id IS DISTINCT FROM p.document_id"""
    ).fetchone()[0]
    assert wrong == 0
    assert server.execute("SELECT count(*) FROM keyword_postings").fetchone()[0] > 0
    found = keywords.best_chunks(server, '"deer" OR "layer" OR "run"', COLUMN_WEIGHTS, 100)
    owners = dict(server.execute("SELECT id, document_id FROM chunks").fetchall())
    assert found and all(m.document_id == owners[m.chunk_id] for m in found)
    server.close()


def test_the_tokenizer_is_chunks_fts_own(tmp_path: Path) -> None:
    """pg_keywords splits text with the tokenizer of the SQLite index's chunks_fts."""
    lite = open_db(tmp_path / "tsm.db", create=True)
    (sql,) = lite.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    lite.close()
    assert f"tokenize = '{pg_keywords.FTS5_TOKENIZE}'" in sql


def test_phrase_lexemes_as_fts5_splits_them() -> None:
    assert pg_keywords.phrase_lexemes("Running CAFÉ") == ("run", "cafe")
    assert pg_keywords.phrase_lexemes("snake_case") == ("snake", "case")
    assert pg_keywords.phrase_lexemes("。、") == ()
    long = pg_keywords.phrase_lexemes("x" * 3000)
    assert len(long) == 1 and long[0].startswith("#")


def test_expressions_other_than_or_of_phrases_are_refused() -> None:
    assert pg_keywords.expression_phrases('("a" OR "b c") OR "d"') == ["a", "b c", "d"]
    assert pg_keywords.expression_phrases('"say ""hi"""') == ['say "hi"']
    for bad in ('"a" AND "b"', '"a" "b"', "a", '"a" OR', '("a"', '"a")', '"a"*', ""):
        with pytest.raises(ValueError):
            pg_keywords.expression_phrases(bad)


def _copy_as_schema_6(lite: sqlite3.Connection, server: Any) -> None:
    """SQLite's documents, chunks and keyword rows written into a schema-6 store the way tsm
    wrote them then: a tsvector, counts and offsets in JSON, and a posting per term."""
    for doc_id, path, text in lite.execute("SELECT id, path, text FROM documents"):
        server.execute(
            """INSERT INTO documents(id, path, type, title, content_hash, size, mtime, category,
                   text, indexed_at) VALUES (?, ?, 'markdown', ?, ?, 1, 0, 'note', ?, 0)""",
            (doc_id, path, path, path, text),
        )
    for row in lite.execute("SELECT id, document_id, chunk_index, section, text FROM chunks"):
        server.execute(
            """INSERT INTO chunks(id, document_id, chunk_index, section, text, embed_hash)
               VALUES (?, ?, ?, ?, ?, 'h')""",
            row,
        )
    for table in ("documents", "chunks"):  # identities go on past the copied ids
        server.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}"
        )
    for chunk_id, *columns in lite.execute(
        "SELECT rowid, title, section, body, tags FROM chunks_fts"
    ):
        ((terms, tokens),) = pg_keywords.stored_terms([columns])
        lexemes = [column.split() for column in terms.split("\n")]
        positions = {
            lex: [[i for i, t in enumerate(col) if t == lex] for col in lexemes]
            for lex in dict.fromkeys(t for col in lexemes for t in col)
        }
        counts = {lex: [len(found) for found in at] for lex, at in positions.items()}
        server.execute(
            """INSERT INTO chunk_keywords(chunk_id, lexemes, counts, positions, tokens)
               VALUES (?, array_to_tsvector(?::text[]), ?::jsonb, ?::jsonb, ?)""",
            (chunk_id, list(counts), json.dumps(counts), json.dumps(positions), tokens),
        )
        for lex, found in counts.items():
            server.execute(
                """INSERT INTO keyword_postings(lexeme, chunk_id, c0, c1, c2, c3, tokens)
                   VALUES (?, ?, ?, ?, ?, ?, ?)""",
                (lex, chunk_id, *found, tokens),
            )


def test_a_store_of_schema_6_ranks_as_fts5_once_migrated(pg_url: str, tmp_path: Path) -> None:
    """Migrations m007 and m009 turn the keyword rows of an existing team store into the new
    index: the same matches, ranks and documents as FTS5 on the same chunks, and new writes
    join them."""
    lite = open_db(tmp_path / "tsm.db", create=True)
    docs = _corpus(seed=29)
    _write(lite, docs)
    server = postgres.connect(pg_url)
    migrations.apply(server, up_to=6)  # as tsm left a store before m007
    _copy_as_schema_6(lite, server)
    assert migrations.apply(server) == migrations.LATEST
    columns = {
        name
        for (name,) in server.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
            ("chunk_keywords",),
        )
    }
    assert columns == {"chunk_id", "terms", "tokens"}
    more = [("c/new.md", [("deer", "", "boundary layer running cafe")], "study")]
    for conn in (lite, server):
        _write(conn, more)
    for query in ("running cafe", "境界層の流れ", "snake_case Boundary-Layer", "deer trap"):
        expression = match_expression(get_tokenizer().query_terms(query))
        assert expression is not None
        _compare(lite, server, expression)
    for expression in ('"boundary layer"', '"trap deer trap"', '"layer" OR "deer trap"'):
        _compare(lite, server, expression)
    server.close()
    lite.close()


def _ranks_by_place(conn: Any, expression: str) -> dict[tuple[str, int], float]:
    """Every match's rank keyed by (path, chunk index): ids differ between two stores."""
    places = dict(
        (cid, (path, index))
        for cid, path, index in conn.execute(
            """SELECT c.id, d.path, c.chunk_index FROM chunks c
               JOIN documents d ON d.id = c.document_id"""
        )
    )
    found = keywords.best_chunks(conn, expression, COLUMN_WEIGHTS, 100_000)
    return {places[m.chunk_id]: m.rank for m in found}


def test_two_concurrent_writers_keep_the_statistics_right(pg_url: str, tmp_path: Path) -> None:
    """Two writers at once, each adding, replacing and deleting its own documents in many
    small transactions: afterwards N, the token total and every term's postings are those of
    the chunks that remain (nothing lost or counted twice), and the ranks are FTS5's on the
    same final documents."""
    rng = random.Random(11)
    plans = []
    for writer in "ab":
        steps: list[tuple[str, Any]] = []
        for i in range(60):
            path = f"{writer}/{i}.md"
            chunks = [("", "", _words(rng, ENGLISH, 1, 15)) for _ in range(rng.randint(1, 3))]
            steps.append(("write", (path, chunks, "")))
            if i % 3 == 0:  # replaced by another version
                steps.append(("write", (path, [("", "", _words(rng, ENGLISH, 1, 15))], "")))
            if i % 5 == 0 and i:
                steps.append(("delete", f"{writer}/{i - 1}.md"))
        plans.append(steps)

    def run(steps: list[tuple[str, Any]], conn: Any) -> None:
        for kind, what in steps:
            if kind == "write":
                _write(conn, [what])
            else:
                _delete(conn, [what])

    setup = postgres.connect(pg_url)
    migrations.apply(setup)
    setup.close()
    writers = [postgres.connect(pg_url) for _ in plans]
    errors: list[BaseException] = []

    def guarded(steps: list[tuple[str, Any]], conn: Any) -> None:
        try:
            run(steps, conn)
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    threads = [
        threading.Thread(target=guarded, args=(steps, conn))
        for steps, conn in zip(plans, writers, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    lite = open_db(tmp_path / "tsm.db", create=True)
    for steps in plans:
        run(steps, lite)
    server = writers[0]
    rows, tokens = server.execute("SELECT count(*), sum(tokens) FROM chunk_keywords").fetchone()
    assert server.execute("SELECT sum(rows), sum(tokens) FROM keyword_totals").fetchone() == (
        rows,
        tokens,
    )
    assert rows == lite.execute("SELECT count(*) FROM chunks").fetchone()[0]
    postings = server.execute("SELECT count(*) FROM keyword_postings").fetchone()[0]
    assert postings == sum(
        len(set(terms.split())) for (terms,) in server.execute("SELECT terms FROM chunk_keywords")
    )
    for query in ("run cafe", "deer trap study", "boundary layer", "naive résumé 42"):
        expression = match_expression(get_tokenizer().query_terms(query))
        assert expression is not None
        expected, got = _ranks_by_place(lite, expression), _ranks_by_place(server, expression)
        assert got.keys() == expected.keys()
        for place, rank in expected.items():
            assert math.isclose(got[place], rank, rel_tol=1e-9, abs_tol=1e-12), place
    for conn in writers:
        conn.close()
    lite.close()


def test_a_full_ranking_brings_its_count_in_its_own_statement(
    both: tuple[sqlite3.Connection, Any],
) -> None:
    """fts_hits of words more documents hold than it ranks: the same hits and count as
    SQLite's, and on PostgreSQL one statement, the ranking's, which also brings the id of
    every match for the count (a second statement read them, and matched the phrase again)."""
    lite, server = both
    expression = '"deer" OR "layer" OR "boundary layer"'
    expected = fts_hits(lite, expression, EVERYTHING, (), 5, lambda: chunk_documents(lite, "l"))
    assert expected[1] > 5
    docs = chunk_documents(server, "pg-keywords-count")
    sent: list[str] = []

    class Counting(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
            sent.append(str(query))
            return super().execute(query, params, **kw)

    server.raw.cursor_factory = Counting
    try:
        got = fts_hits(server, expression, EVERYTHING, (), 5, lambda: docs)
    finally:
        server.raw.cursor_factory = psycopg.Cursor
    assert got == expected
    assert len(sent) == 1, sent
