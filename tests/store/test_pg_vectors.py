"""Vectors on PostgreSQL (pgvector, store/pg_vectors.py) and the searcher's two paths over
them (search/vector.py): the in-memory matrix patched from the change log, and the HNSW
index above ANN_MIN_ROWS. A real server (tests/pg.py), real writes through the store."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import numpy as np
import pytest

from tests.store.notes import embed_pending, pg_connect
from tsm.embed.fake import FakeEmbedder
from tsm.models import Chunk, Document, Section
from tsm.search import vector
from tsm.search.vector import AnnIndex, VectorIndex
from tsm.store import catalog, migrations, vectors
from tsm.store.connect import Connection, Transaction
from tsm.store.documents import ChunkRow, lock_paths, write_document
from tsm.store.postgres import vectors as pg_vectors

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()


pytestmark = pytest.mark.usefixtures("fresh_vector_cache")


def add(conn: Connection, path: str, bodies: list[str], keys: list[str] | None = None) -> int:
    """A document of `bodies`, in a transaction of its own unless one is open; its chunks'
    vector keys are `keys` (texts already embedded) or their own."""
    doc = Document(
        path=path,
        type="markdown",
        title=f"Title of {path}",
        text="\n\n".join(bodies),
        sections=tuple(Section("H", b) for b in bodies),
    )
    keys = keys or [f"{path}#{i}:{b}" for i, b in enumerate(bodies)]
    rows = [
        ChunkRow(Chunk(i, "H", b, line=1), doc.title, "h", b, key)
        for i, (b, key) in enumerate(zip(bodies, keys, strict=True))
    ]
    with nullcontext() if conn.in_transaction else Transaction(conn):
        lock_paths(conn, [path])
        return write_document(
            conn, doc, rows, content_hash=path, size=1, mtime=1.0, category="note", fts_tags=""
        )


def live_rows(index: VectorIndex) -> dict[int, tuple[int, bytes]]:
    dead = set() if index.dead is None else set(index.dead.tolist())
    return {
        int(c): (int(d), index.matrix[i].tobytes())
        for i, (c, d) in enumerate(zip(index.chunk_ids, index.doc_ids, strict=True))
        if i not in dead
    }


def exact_index(conn: Connection, key: str, model: str, dim: int) -> VectorIndex:
    index = vector.load_index(conn, key, model, dim)
    assert isinstance(index, VectorIndex)
    return index


def fresh_load(conn: Connection, key: str, model: str, dim: int) -> VectorIndex:
    """A load from scratch, leaving the cached (patched) index in place."""
    kept = vector._cache.pop((key, model), None)
    try:
        return exact_index(conn, key, model, dim)
    finally:
        if kept is not None:
            vector._cache[(key, model)] = kept


def test_patching_survives_writers_committing_out_of_order(pg_url: str) -> None:
    """Writer A writes its chunks first but commits last, after writer B: a reader that
    patched its matrix between B's commit and A's must still get A's rows afterwards
    (a log read by sequence number alone would skip them: A's entries number lower than
    B's, which the reader has already seen). Two writers of documents, whose chunks take
    texts that have vectors: writers of vectors wait for each other and for them
    (store/postgres/schema.py, m010), so they cannot commit out of order."""
    a, b, reader = pg_connect(pg_url), pg_connect(pg_url), pg_connect(pg_url)
    embedder = FakeEmbedder(dim=16)
    try:
        for n in range(6):
            add(a, f"n{n}.md", [f"{WORDS[n]} {WORDS[n + 1]} body {i}" for i in range(3)])
        embed_pending(a, embedder)
        keys = [h for (h,) in a.execute("SELECT embed_hash FROM chunks ORDER BY id")]
        first, second = keys[:9], keys[9:]
        key = "pg-out-of-order"
        assert exact_index(reader, key, embedder.name, 16).live_rows == 18

        a.execute("BEGIN")
        add(a, "a.md", [f"again {i}" for i in range(9)], first)  # the lower sequence numbers
        add(b, "b.md", [f"again {i}" for i in range(9)], second)
        mid = exact_index(reader, key, embedder.name, 16)
        assert len(live_rows(mid)) == 27  # B's only: A has not committed
        a.execute("COMMIT")
        patched = exact_index(reader, key, embedder.name, 16)
        assert patched is not mid  # patched from the log, not reloaded
        fresh = fresh_load(reader, key, embedder.name, 16)
        assert len(live_rows(fresh)) == 36
        assert live_rows(patched) == live_rows(fresh)
        assert patched.missing == fresh.missing == 0
    finally:
        for conn in (a, b, reader):
            conn.close()


def test_other_transactions_ending_leave_a_reader_cached(pg_url: str) -> None:
    """On a shared server every client's writes move the oldest running transaction that a
    reader's stamp holds; as long as none of them wrote a vector, the reader keeps its
    matrix without re-reading the log, and the first vector written is still seen."""
    writer, reader = pg_connect(pg_url), pg_connect(pg_url)
    embedder = FakeEmbedder(dim=16)
    try:
        add(writer, "a.md", ["alpha bravo", "charlie delta"])
        embed_pending(writer, embedder)
        key = "pg-unrelated-writes"
        first = exact_index(reader, key, embedder.name, 16)
        for _ in range(3):
            writer.execute("SELECT pg_current_xact_id()").fetchone()
            with Transaction(writer):
                vectors.set_meta(writer, "unrelated", "x")
            assert exact_index(reader, key, embedder.name, 16) is first
        add(writer, "b.md", ["echo foxtrot"])
        embed_pending(writer, embedder)
        after = exact_index(reader, key, embedder.name, 16)
        assert after is not first and len(live_rows(after)) == 3
    finally:
        for conn in (writer, reader):
            conn.close()


def test_hnsw_path_returns_what_the_exact_path_returns(
    pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the threshold (forced low) the searcher asks the HNSW index: on a small set
    its ranking, each document's best cosine, the mean cosine and the chunks without a
    vector agree with the exact path, with and without a filter. The index is built by the
    write that takes the model's vectors to HNSW_MIN_ROWS (also forced low), not before:
    the searcher takes the exact path until then."""
    monkeypatch.setattr(pg_vectors, "HNSW_MIN_ROWS", 45)
    embedder = FakeEmbedder(dim=32)
    for n in range(40):
        add(
            pg,
            f"d{n}.md",
            [f"{WORDS[n % 26]} {WORDS[(n * 7) % 26]} n{n} part {i}" for i in range(3)],
        )
    embed_pending(pg, embedder, limit=40)
    assert not pg_vectors.has_hnsw(pg, embedder.name, 32)  # 40 vectors: none needed yet
    assert catalog.index_health(pg).missing_hnsw == ()  # and doctor does not miss one
    embed_pending(pg, embedder, limit=60)  # 20 chunks stay without a vector
    assert pg_vectors.has_hnsw(pg, embedder.name, 32)
    key = "pg-hnsw"
    exact = exact_index(pg, key, embedder.name, 32)
    assert exact.missing == 20
    vector._cache.clear()
    monkeypatch.setattr(vector, "ANN_MIN_ROWS", 50)
    ann = vector.load_index(pg, key, embedder.name, 32)
    assert isinstance(ann, AnnIndex)
    assert (ann.live_rows, ann.missing, ann.total_chunks) == (100, 20, 120)
    filtered = np.asarray(
        [r[0] for r in pg.execute("SELECT id FROM chunks WHERE mod(id, 3) = 0").fetchall()],
        dtype=np.int64,
    )
    for text in ("alpha golf", "kilo part 2", "zulu yankee part 1"):
        query = embedder.embed_query(text)
        for allowed in (None, filtered):
            want = exact.match(pg, query, 10, allowed)
            got = ann.match(pg, query, 10, allowed)
            assert [d for _, d, _ in got.ranked[:5]] == [d for _, d, _ in want.ranked[:5]]
            assert np.allclose([s for *_, s in got.ranked], [s for *_, s in want.ranked], atol=1e-5)
            assert got.background == pytest.approx(want.background, abs=1e-5)
            for doc_id in {d for _, d, _ in want.ranked} | {1, 39}:
                assert got.doc_similarity(doc_id) == pytest.approx(
                    want.doc_similarity(doc_id), abs=1e-5
                )
            # the keyword hits it is asked about pass the same filter
            some = [c for c in range(1, 121, 4) if allowed is None or c in allowed]
            assert got.lacking(some) == want.lacking(some)


def test_dimension_change_under_the_same_model_name(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that changes its dimension under the same name (a remote endpoint swapped,
    a config edited): its new vectors replace the old in place, the searcher's patched
    matrix holds only the query's dimension and equals a fresh load, and on PostgreSQL each
    dimension has its own HNSW index, the old one dropped with its last vector."""
    monkeypatch.setattr(pg_vectors, "HNSW_MIN_ROWS", 0)  # an index from the first vector
    small, large = FakeEmbedder(dim=8), FakeEmbedder(dim=24)
    small.name = large.name = "same-name"
    for n in range(5):
        add(store, f"n{n}.md", [f"{WORDS[n]} text {i}" for i in range(2)])
    embed_pending(store, small)
    key = "dim-change"
    before = exact_index(store, key, "same-name", 8)
    assert before.matrix.shape == (10, 8)
    every = vectors.pending(store, "other")  # each text, whatever has a vector

    def replace(start: int, stop: int) -> None:  # re-embedded with the new dimension
        part = every[start:stop]
        with Transaction(store):
            vectors.store(
                store,
                "same-name",
                zip(
                    [p.embed_hash for p in part],
                    large.embed_documents([p.text for p in part]),
                    strict=True,
                ),
            )

    replace(0, 2)  # an upsert: the rows change in place
    old = exact_index(store, key, "same-name", 8)  # patched: the 2 rows are gone from it
    assert old is not before and len(live_rows(old)) == 8
    assert live_rows(old) == live_rows(fresh_load(store, key, "same-name", 8))
    new = exact_index(store, key, "same-name", 24)  # another dimension: a load of its own
    assert new.matrix.shape == (2, 24)
    replace(2, 4)
    patched = exact_index(store, key, "same-name", 24)
    assert patched is not new and len(live_rows(patched)) == 4
    assert live_rows(patched) == live_rows(fresh_load(store, key, "same-name", 24))
    if getattr(store, "dialect", "sqlite") != "postgres":
        return
    assert pg_vectors.has_hnsw(store, "same-name", 8)
    assert pg_vectors.has_hnsw(store, "same-name", 24)
    replace(4, 10)
    with Transaction(store):
        assert pg_vectors.drop_unused_hnsw(store) == 1
    assert not pg_vectors.has_hnsw(store, "same-name", 8)
    assert pg_vectors.has_hnsw(store, "same-name", 24)


def test_vectors_round_trip_through_pgvector(pg: Any) -> None:
    """pgvector's binary form both ways: what is stored comes back bit for bit as float32."""
    add(pg, "a.md", ["one", "two", "three"])
    rng = np.random.default_rng(5)
    values = rng.standard_normal((3, 384)).astype(np.float32)
    hashes = [p.embed_hash for p in vectors.pending(pg, "m")]
    with Transaction(pg):
        vectors.store(pg, "m", zip(hashes, values, strict=True))
    chunk_ids, _, matrix = vectors.load_matrix(pg, "m")
    assert matrix.dtype == np.float32 and matrix.shape == (3, 384)
    by_hash = dict(zip(hashes, values, strict=True))
    stored = {cid: h for cid, h in pg.execute("SELECT id, embed_hash FROM chunks").fetchall()}
    for cid, row in zip(chunk_ids.tolist(), matrix, strict=True):
        assert row.tobytes() == by_hash[stored[cid]].tobytes()
    some, _, part = vectors.load_matrix(pg, "m", chunk_ids[:2].tolist(), 384)
    assert some.tolist() == chunk_ids[:2].tolist() and part.tobytes() == matrix[:2].tobytes()


def test_m004_moves_bytea_vectors_into_pgvector(pg_url: str) -> None:
    """A PostgreSQL store made before m004 (vectors as BYTEA) keeps every vector, bit for
    bit, in the pgvector column, and the searcher reads them."""
    from tsm.store.postgres import connection as postgres

    conn = postgres.connect(pg_url)
    try:
        steps = migrations.MIGRATIONS
        m004 = steps.index(migrations.m004_pgvector)
        for number, step in enumerate(steps[:m004], start=1):
            with Transaction(conn):
                step(conn)
                conn.execute(
                    "INSERT INTO migrations(version, name, applied_at) VALUES (?, ?, 0)",
                    (number, step.__name__),
                )
        with Transaction(conn):  # rows as that schema held them (today's writer adds
            # keyword rows of a later schema)
            (doc_id,) = conn.execute(
                """INSERT INTO documents(path, type, title, content_hash, size, mtime,
                       category, text, indexed_at)
                   VALUES ('old.md', 'markdown', 'old', 'x', 1, 0, 'note', 'text', 0)
                   RETURNING id"""
            ).fetchone()
            conn.executemany(
                """INSERT INTO chunks(document_id, chunk_index, section, text, embed_hash)
                   VALUES (?, ?, 'H', ?, ?)""",
                [(doc_id, i, b, f"old.md#{i}:{b}") for i, b in enumerate(["first", "second"])],
            )
        values = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
        hashes = [p.embed_hash for p in vectors.pending(conn, "old-model")]
        with Transaction(conn):
            conn.executemany(
                "INSERT INTO embeddings(model, embed_hash, dim, vector) VALUES (?, ?, 8, ?)",
                [("old-model", h, v.tobytes()) for h, v in zip(hashes, values, strict=True)],
            )
        assert migrations.apply(conn) == migrations.LATEST
        ids, _, matrix = vectors.load_matrix(conn, "old-model", dim=8)
        by_chunk = dict(conn.execute("SELECT id, embed_hash FROM chunks").fetchall())
        by_hash = dict(zip(hashes, values, strict=True))
        assert [by_hash[by_chunk[c]].tobytes() for c in ids.tolist()] == [
            row.tobytes() for row in matrix
        ]
    finally:
        conn.close()


def test_the_index_exists_before_a_search_may_ask_it() -> None:
    """The HNSW index is built at HNSW_MIN_ROWS vectors; a search takes the HNSW path from
    ANN_MIN_ROWS on, or from ANN_MIN_ROWS x ANN_HYSTERESIS once it has: never before the
    index is there (it would fall back to the exact path, loading the whole matrix)."""
    assert pg_vectors.HNSW_MIN_ROWS <= vector.ANN_MIN_ROWS * vector.ANN_HYSTERESIS
