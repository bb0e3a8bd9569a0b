"""The statistics of a team store's vectors that a search's HNSW path reads (migration m010:
per (model, dimension), the chunks with a vector and their sum; every chunk): kept by each
write of chunks or vectors in its own transaction, read in one statement
(store/postgres/vectors.py summary), and equal to a scan of every vector after any mix of
writes, two writers at once, and the migration of a store that had vectors before. A real
server (tests/pg.py), real writes through the store."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest

from tests.store.notes import embed_pending, insert_vectors, pg_connect
from tsm.embed.fake import FakeEmbedder
from tsm.models import Chunk, Document, Section
from tsm.search import vector
from tsm.search.vector import AnnIndex
from tsm.store import failures, migrations, vectors
from tsm.store.connect import Transaction
from tsm.store.documents import ChunkRow, delete_document, lock_paths, write_document
from tsm.store.postgres import vectors as pg_vectors

BODIES = [f"{a} {b}" for a in ("alpha", "bravo", "charlie", "delta") for b in "wxyz"]


pytestmark = pytest.mark.usefixtures("fresh_vector_cache")


def write(conn: Any, path: str, bodies: list[str]) -> int:
    """A document whose chunks' vector keys are their texts': two documents that share a
    text share its vector, as indexing makes them."""
    doc = Document(path, "markdown", path, "\n".join(bodies), tuple(Section("", b) for b in bodies))
    rows = [
        ChunkRow(Chunk(i, "", b), path, "", b, hashlib.sha1(b.encode()).hexdigest())
        for i, b in enumerate(bodies)
    ]
    with Transaction(conn):
        lock_paths(conn, [path])
        return write_document(
            conn, doc, rows, content_hash=path, size=1, mtime=1.0, category="note", fts_tags=""
        )


def remove(conn: Any, path: str) -> None:
    with Transaction(conn):
        lock_paths(conn, [path])
        row = conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
        if row is not None:
            delete_document(conn, int(row[0]))


def scanned(conn: Any, model: str, dim: int) -> tuple[int, int, np.ndarray | None]:
    """What `summary` read before the writers kept it: a scan of every vector."""
    have, mean = conn.execute(
        f"""SELECT COUNT(*), vector_send(AVG(e.vector::vector({dim}))) FROM chunks c
            JOIN embeddings e ON e.model = ? AND e.dim = {dim} AND e.embed_hash = c.embed_hash""",
        (model,),
    ).fetchone()
    (total,) = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
    return (
        int(have),
        int(total),
        None if mean is None else pg_vectors._matrix([bytes(mean)], dim)[0],
    )


def assert_kept(conn: Any, model: str, dim: int) -> None:
    """The kept statistics are the scan's, and come from the writers' rows."""
    have, total, mean = pg_vectors.summary(conn, model, dim)
    want = scanned(conn, model, dim)
    assert (have, total) == want[:2]
    if want[2] is None:
        assert mean is None
    else:
        assert mean is not None and np.allclose(mean, want[2], atol=1e-5)
    (rows,) = conn.execute(
        "SELECT count(*) FROM vector_totals WHERE model = ? AND dim = ?", (model, dim)
    ).fetchone()
    assert rows >= (1 if have else 0)


def test_the_statistics_follow_every_kind_of_write(pg: Any) -> None:
    small, large = FakeEmbedder(dim=8), FakeEmbedder(dim=16)
    for n in range(6):
        write(pg, f"d{n}.md", BODIES[n : n + 5])  # neighbours share texts
    assert_kept(pg, small.name, 8)  # no vector yet
    embed_pending(pg, small, limit=4)
    assert_kept(pg, small.name, 8)
    embed_pending(pg, small)
    embed_pending(pg, large)
    write(pg, "later.md", BODIES[2:9])  # texts that have vectors already, and a new one
    remove(pg, "d0.md")
    write(pg, "d1.md", BODIES[10:12])  # replaced
    for embedder in (small, large):
        assert_kept(pg, embedder.name, embedder.dim)
    # the model changes its dimension under the same name: the vector is replaced in place
    other = FakeEmbedder(dim=4)
    text = BODIES[3]
    with Transaction(pg):
        vectors.store(
            pg,
            small.name,
            [(hashlib.sha1(text.encode()).hexdigest(), other.embed_documents([text])[0])],
        )
    assert_kept(pg, small.name, 8)
    assert_kept(pg, small.name, 4)
    for n in range(1, 6):
        remove(pg, f"d{n}.md")
    with Transaction(pg):
        vectors.drop_orphans(pg)
    assert_kept(pg, small.name, 8)
    with Transaction(pg):
        vectors.drop_model(pg, large.name)
    assert_kept(pg, large.name, 16)
    assert_kept(pg, small.name, 8)


def test_the_rows_of_changes_are_folded(pg: Any) -> None:
    """Every 256th row of changes, a writer folds them into one per (model, dimension):
    the statistics stay a few rows whatever the number of writes."""
    embedder = FakeEmbedder(dim=8)
    for n in range(150):
        write(pg, f"n{n}.md", [f"note {n} alpha", f"note {n} bravo"])
        embed_pending(pg, embedder)
    (rows,) = pg.execute("SELECT count(*) FROM vector_totals").fetchone()
    assert rows < 256
    assert_kept(pg, embedder.name, 8)


def retried(work: Callable[[], object]) -> None:
    """As indexing runs a write: again when it lost a race (a deadlock) with the other."""
    for _ in range(20):
        try:
            work()
            return
        except Exception as exc:
            if not failures.retryable(exc):
                raise
            time.sleep(random.uniform(0, 0.01))
    raise AssertionError("lost 20 races in a row")


def drop_orphans(conn: Any) -> None:
    with Transaction(conn):
        vectors.drop_orphans(conn)


def test_two_writers_at_once_lose_nothing(pg_url: str) -> None:
    """One writer writes and removes documents whose texts another is embedding at the same
    time (and drops the vectors left unused): a chunk written while its text's vector is
    being stored is counted once, by whichever of the two commits last."""
    documents, embedding, reader = pg_connect(pg_url), pg_connect(pg_url), pg_connect(pg_url)
    embedder = FakeEmbedder(dim=8)
    done = threading.Event()
    errors: list[BaseException] = []
    rng = random.Random(29)

    def write_documents() -> None:
        try:
            for n in range(120):
                path = f"w{n % 15}.md"
                if n % 4 == 3:
                    retried(partial(remove, documents, path))
                else:
                    retried(partial(write, documents, path, rng.sample(BODIES, 4)))
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def embed() -> None:
        try:
            while not done.is_set():
                retried(partial(embed_pending, embedding, embedder, 3))
                if rng.random() < 0.2:
                    retried(partial(drop_orphans, embedding))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write_documents), threading.Thread(target=embed)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert not errors, errors
        assert_kept(reader, embedder.name, 8)
    finally:
        for conn in (documents, embedding, reader):
            conn.close()


def test_a_store_with_vectors_from_before_gets_its_statistics(pg_url: str) -> None:
    conn = pg_connect(pg_url, up_to=9)
    embedder = FakeEmbedder(dim=8)
    try:
        for n in range(5):
            write(conn, f"d{n}.md", BODIES[n : n + 4])
        batch = vectors.pending(conn, embedder.name, 6)
        matrix = embedder.embed_documents([p.text for p in batch])
        hashes = [p.embed_hash for p in batch]
        with Transaction(conn):
            insert_vectors(conn, embedder.name, list(zip(hashes, matrix, strict=True)))
        assert migrations.apply(conn) == migrations.LATEST
        assert_kept(conn, embedder.name, 8)
        embed_pending(conn, embedder)
        assert_kept(conn, embedder.name, 8)
    finally:
        conn.close()


def test_a_search_on_the_hnsw_path_sees_a_write_at_once(
    pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The searcher's counts and mean vector follow the writes as the change log moves,
    read from the kept statistics, with no timer to wait out."""
    monkeypatch.setattr(pg_vectors, "HNSW_MIN_ROWS", 0)
    monkeypatch.setattr(vector, "ANN_MIN_ROWS", 10)
    embedder = FakeEmbedder(dim=8)
    for n in range(8):
        write(pg, f"n{n}.md", [f"note {n} alpha", f"note {n} bravo"])
    embed_pending(pg, embedder)
    first = vector.load_index(pg, "pg-totals", embedder.name, 8)
    assert isinstance(first, AnnIndex) and (first.live_rows, first.missing) == (16, 0)
    write(pg, "more.md", ["more charlie", "more delta"])
    second = vector.load_index(pg, "pg-totals", embedder.name, 8)
    assert isinstance(second, AnnIndex) and (second.live_rows, second.missing) == (16, 2)
    embed_pending(pg, embedder)
    third = vector.load_index(pg, "pg-totals", embedder.name, 8)
    assert isinstance(third, AnnIndex) and (third.live_rows, third.missing) == (18, 0)
    want = scanned(pg, embedder.name, 8)[2]
    assert third.mean is not None and np.allclose(third.mean, want, atol=1e-5)


def pages_read(conn: Any, table: str) -> int:
    """Pages of `table` and its indexes read so far, as the server's statistics count them."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    (pages,) = conn.execute(
        """SELECT heap_blks_hit + heap_blks_read + idx_blks_hit + idx_blks_read
           FROM pg_statio_user_tables WHERE relname = ?""",
        (table,),
    ).fetchone()
    return int(pages)


def test_a_write_finds_its_vectors_without_reading_every_key(pg: Any) -> None:
    """Each write of chunks looks up the vectors of their hashes under every model. Keyed by
    model first, that look-up read the whole key index on a server without skip scan
    (before PostgreSQL 18), and on one with it took a descent per model: either way a cost
    that grows with the store, paid by every document written."""
    bodies = ["alpha one", "bravo two"]
    write(pg, "note.md", bodies)
    hashes = [hashlib.sha1(b.encode()).hexdigest() for b in bodies]
    rng = np.random.default_rng(7)
    with Transaction(pg):
        for model in range(300):  # other models, and vectors no chunk of this store uses
            items = [(f"{model:03d}{n:037d}", rng.random(2, dtype=np.float32)) for n in range(30)]
            vectors.store(pg, f"model-{model:03d}", items)
        vectors.store(pg, "model-000", [(h, rng.random(2, dtype=np.float32)) for h in hashes])
    pg.execute("ANALYZE embeddings")
    before = pages_read(pg, "embeddings")
    write(pg, "note.md", [*bodies, "charlie three"])  # its chunks written anew
    read = pages_read(pg, "embeddings") - before
    assert read <= 40, f"{read} pages of the vectors read for one document"
    assert_kept(pg, "model-000", 2)
