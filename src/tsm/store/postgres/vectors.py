"""Vectors on PostgreSQL: pgvector's `vector` column and an HNSW index per model.

`embeddings.vector` has pgvector's type without a dimension (migration m004): one model may
change its dimension under the same name, and two models may differ. The HNSW index is
therefore per (model, dimension): a partial index over `vector::vector(dim)` for the rows of
that model and dimension (pgvector's way to index a column of several dimensions), built in
one pass by the `store` that takes the model's vectors to HNSW_MIN_ROWS and kept up to date by
every insert after it. Below that, searches take the exact path and no index is needed. Searches
name the model and the dimension as literals in the SQL, so the planner proves the partial
index's predicate whether or not psycopg prepared the statement.

Vectors travel in pgvector's binary form both ways (a 4-byte header, then big-endian
float4): a 100k-row matrix loads as fast as from BYTEA (bench/results/pg_vectors.md), so
the table keeps one copy of each vector, which both the exact and the HNSW path read.

psycopg is imported only by the PostgreSQL store (store/postgres/connection.py)."""

from __future__ import annotations

import hashlib
import struct
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ..connect import Connection
    from ..protocol import VectorRow

# HNSW build parameters: pgvector's defaults (m = 16, ef_construction = 64) measured at
# 10k-1M rows in bench/results/pg_vectors.md.
HNSW_WITH = "m = 16, ef_construction = 64"
# Serialises the creation of one (model, dimension)'s index by two writers (any constant).
_HNSW_LOCK = 0x74736D76  # "tsmv"
# The memory an index build may use: pgvector builds in memory up to this, then slowly.
BUILD_MEMORY = "512MB"
# The vectors of a (model, dimension) from which its HNSW index is kept: search/vector.py's
# ANN_MIN_ROWS x ANN_HYSTERESIS, the fewest with which a search may take the HNSW path, so the
# index exists before any search asks it. Below, it would only cost writes: grown one insert
# at a time from the first vector it took 13 s of a 10k-chunk `tsm index` (1.3 ms a vector,
# half the time PostgreSQL took beyond SQLite's), where one build of 50k rows takes 33 s
# (bench/results/pg_vectors.md; tests/store/test_pg_vectors.py checks the two agree).
HNSW_MIN_ROWS = 45_000


class PgVector:
    """A float32 vector bound as pgvector's binary `vector` (store() wraps each in one)."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values


def binary(values: np.ndarray) -> bytes:
    """pgvector's binary form (vector_send): dimension, a reserved int16, big-endian float4."""
    return struct.pack(">HH", int(values.shape[0]), 0) + values.astype(">f4").tobytes()


_adapted: weakref.WeakSet[Any] = weakref.WeakSet()  # psycopg connections that know PgVector


def _adapt(conn: Connection) -> Any:
    """conn's psycopg connection, taught to send PgVector as pgvector's binary `vector`."""
    raw = conn.raw  # type: ignore[union-attr]
    if raw not in _adapted:
        from psycopg.adapt import Dumper
        from psycopg.pq import Format

        row = raw.execute("SELECT 'vector'::regtype::oid").fetchone()
        assert row is not None
        vector_oid = int(row[0])

        class VectorDumper(Dumper):
            format = Format.BINARY
            oid = vector_oid

            def dump(self, obj: Any) -> bytes:
                return binary(obj.values)

        raw.adapters.register_dumper(PgVector, VectorDumper)
        _adapted.add(raw)
    return raw


def quoted(text: str) -> str:
    """`text` as an SQL string literal (standard_conforming_strings, on since 9.1)."""
    return "'" + text.replace("'", "''") + "'"


def index_name(model: str, dim: int) -> str:
    digest = hashlib.sha256(f"{model}\0{dim}".encode()).hexdigest()[:16]
    return f"embeddings_hnsw_{digest}"


def has_hnsw(conn: Connection, model: str, dim: int) -> bool:
    (found,) = conn.execute(
        "SELECT to_regclass(?) IS NOT NULL", (index_name(model, dim),)
    ).fetchone()
    return bool(found)


def hnsw_due(conn: Connection, model: str, dim: int, adding: int = 0) -> bool:
    """Whether (model, dim), with `adding` more vectors, has enough for its HNSW index."""
    return model_vectors(conn, model, dim) + adding >= HNSW_MIN_ROWS


def ensure_hnsw(
    conn: Connection, model: str, dim: int, adding: int = 0, memory: str = BUILD_MEMORY
) -> None:
    """The HNSW index of (model, dim), built when missing and the model's vectors with the
    `adding` this transaction is about to write reach HNSW_MIN_ROWS; before it writes them
    (made after, it would wait for writers that wait for this one's lock). Call inside a
    transaction. Cosine distance: the vectors are normalised, so it orders as inner product
    does (measured no faster: bench/results/pg_vectors.md)."""
    _adapt(conn)
    if has_hnsw(conn, model, dim) or not hnsw_due(conn, model, dim, adding):
        return
    conn.execute("SELECT pg_advisory_xact_lock(?)", (_HNSW_LOCK,))
    conn.execute(f"SET LOCAL maintenance_work_mem = {quoted(memory)}")
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {index_name(model, dim)} ON embeddings "
        f"USING hnsw ((vector::vector({int(dim)})) vector_cosine_ops) WITH ({HNSW_WITH}) "
        f"WHERE model = {quoted(model)} AND dim = {int(dim)}"
    )


def drop_unused_hnsw(conn: Connection, among: Iterable[tuple[str, int]] | None = None) -> int:
    """Drop the HNSW indexes of (model, dimension) pairs that have no vector left (a model
    forgotten by `tsm reindex vectors`, a dimension replaced): of every pair, or only of
    those `among` (whose vectors were just deleted: no scan of every vector then). Call
    inside a transaction."""
    if among is not None:
        gone = [
            index_name(model, int(dim))
            for model, dim in set(among)
            if conn.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM embeddings WHERE model = ? AND dim = ?)",
                (model, int(dim)),
            ).fetchone()[0]
        ]
        for name in gone:
            conn.execute(f'DROP INDEX IF EXISTS "{name}"')
        return len(gone)
    live = {
        index_name(model, int(dim))
        for model, dim in conn.execute("SELECT DISTINCT model, dim FROM embeddings")
    }
    dropped = 0
    for (name,) in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'embeddings' "
        "AND indexname LIKE 'embeddings_hnsw_%' AND schemaname = current_schema()"
    ).fetchall():
        if name not in live:
            conn.execute(f'DROP INDEX IF EXISTS "{name}"')
            dropped += 1
    return dropped


def storable_rows(
    conn: Connection, model: str, items: Iterable[tuple[str, np.ndarray]]
) -> list[VectorRow]:
    """Each vector as pgvector's `vector`, after making sure each (model, dimension) the
    rows take to HNSW_MIN_ROWS has its HNSW index (ensure_hnsw)."""
    rows: list[VectorRow] = [(model, h, int(v.shape[0]), PgVector(v)) for h, v in items]
    for dim, adding in sorted(Counter(row[2] for row in rows).items()):
        ensure_hnsw(conn, model, dim, adding)
    return rows


def after_delete(conn: Connection) -> None:
    """Vectors were deleted: drop the HNSW indexes of dimensions the model no longer has."""
    drop_unused_hnsw(conn)


def drop_released(conn: Connection) -> int:
    """vectors.drop_orphans on PostgreSQL, in one statement: the hashes it takes out of
    `released_hashes` are exactly those it looks at, whatever commits beside it. The HNSW
    index of a (model, dimension) that lost its last vector goes with it."""
    gone = conn.execute(
        """WITH released AS (DELETE FROM released_hashes RETURNING embed_hash)
           DELETE FROM embeddings e WHERE e.embed_hash IN (SELECT embed_hash FROM released)
           AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = e.embed_hash)
           RETURNING e.model, e.dim"""
    ).fetchall()
    drop_unused_hnsw(conn, [(model, int(dim)) for model, dim in gone])
    return len(gone)


def exported_column(conn: Connection) -> str:
    """What `tsm export` reads of `embeddings`: a pgvector column as real[] (float4: exactly
    the float32 that was stored); a BYTEA one (no pgvector) as stored."""
    row = conn.execute(
        """SELECT t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
           WHERE a.attrelid = to_regclass('embeddings') AND a.attname = 'vector'"""
    ).fetchone()
    return "vector::real[]" if row and str(row[0]) != "bytea" else "vector"


def _matrix(raw_rows: Sequence[bytes], dim: int | None) -> np.ndarray:
    import numpy as np

    if not raw_rows:
        return np.zeros((0, 0), np.float32)
    width = dim if dim is not None else struct.unpack(">H", raw_rows[0][:2])[0]
    body = b"".join(r[4:] for r in raw_rows)
    return np.frombuffer(body, dtype=">f4").astype(np.float32).reshape(len(raw_rows), width)


def load_rows(
    conn: Connection, model: str, chunk_ids: Sequence[int] | None, dim: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """store.vectors.load_matrix on PostgreSQL: the rows come in binary (a cursor of the
    psycopg connection, inside the caller's transaction), vectors as pgvector sends them.
    Without `dim`, the rows of the model's most common dimension."""
    import numpy as np

    raw = _adapt(conn)
    if dim is None:
        row = raw.execute(
            "SELECT dim FROM embeddings WHERE model = %s GROUP BY dim ORDER BY COUNT(*) DESC "
            "LIMIT 1",
            (model,),
        ).fetchone()
        if row is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
        dim = int(row[0])
    sql = """SELECT c.id, c.document_id, e.vector FROM chunks c
             JOIN embeddings e ON e.model = %s AND e.dim = %s AND e.embed_hash = c.embed_hash"""
    rows: list[tuple[int, int, bytes]] = []
    with raw.cursor(binary=True) as cur:
        if chunk_ids is None:
            cur.execute(sql + " ORDER BY c.id", (model, dim))
            rows = cur.fetchall()
        else:
            ids = sorted(set(chunk_ids))
            for start in range(0, len(ids), 5000):
                cur.execute(sql + " WHERE c.id = ANY(%s)", (model, dim, ids[start : start + 5000]))
                rows += cur.fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    found = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    doc_ids = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    return found, doc_ids, _matrix([r[2] for r in rows], dim)


def summary(conn: Connection, model: str, dim: int) -> tuple[int, int, np.ndarray | None]:
    """(chunks with a vector of (model, dim), every chunk, the mean of those vectors): one
    read of the statistics every writer keeps (vector_totals, migration m010), a few rows
    whatever the number of vectors."""
    have, total, every = conn.execute(
        """SELECT sum(chunks) FILTER (WHERE model = ?),
                  vector_send(sum(total) FILTER (WHERE model = ?)),
                  sum(chunks) FILTER (WHERE model = '')
           FROM vector_totals WHERE (model = ? AND dim = ?) OR (model = '' AND dim = 0)""",
        (model, model, model, int(dim)),
    ).fetchone()
    have = int(have or 0)
    mean = None
    if have > 0 and total is not None:
        mean = (_matrix([bytes(total)], dim)[0].astype("float64") / have).astype("float32")
    return have, int(every or 0), mean


def model_vectors(conn: Connection, model: str, dim: int) -> int:
    """Vectors stored for (model, dim): distinct texts, a cheap estimate of its chunks."""
    (count,) = conn.execute(
        "SELECT COUNT(*) FROM embeddings WHERE model = ? AND dim = ?", (model, dim)
    ).fetchone()
    return int(count)


def _query_literal(query: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in query.tolist()) + "]"


def mean_vector(
    conn: Connection, model: str, dim: int, chunk_ids: Sequence[int] | None = None
) -> np.ndarray | None:
    """The mean of the vectors of every chunk (or of `chunk_ids`) that has one: a query's
    mean cosine over those chunks is its dot product with this (pgvector's avg)."""
    import numpy as np

    sql = f"""SELECT vector_send(AVG(e.vector::vector({int(dim)}))) FROM chunks c
              JOIN embeddings e ON e.model = ? AND e.dim = {int(dim)}
              AND e.embed_hash = c.embed_hash"""
    params: tuple[object, ...] = (model,)
    if chunk_ids is not None:
        sql += " WHERE c.id = ANY(?)"
        params += (list(chunk_ids),)
    (value,) = conn.execute(sql, params).fetchone()
    if value is None:
        return None
    return _matrix([bytes(value)], dim)[0].astype(np.float32)


def nearest(
    conn: Connection,
    model: str,
    query: np.ndarray,
    limit: int,
    ef_search: int,
    allowed: Sequence[int] | None = None,
) -> list[tuple[int, int, float]]:
    """(chunk id, document id, cosine) of the chunks whose texts are the `limit` nearest
    the query by the HNSW index of (model, dimension of `query`); with `allowed`, among
    those chunks only (pgvector 0.8's iterative scan goes on through the graph until
    `limit` rows pass the filter; an older pgvector's graph search ends at ef_search
    candidates, so there the filter picks among those). Runs in its own transaction, or
    the caller's."""
    dim = int(query.shape[0])
    vec = f"{quoted(_query_literal(query))}::vector({dim})"
    distance = f"e.vector::vector({dim}) <=> {vec}"
    ef = min(1000, max(int(ef_search), int(limit)))
    iterative = _iterative_scan(conn)
    graph = f"""SELECT e.embed_hash, {distance} AS distance FROM embeddings e
                WHERE e.model = {quoted(model)} AND e.dim = {dim}"""
    params: tuple[object, ...] = ()
    outer = ""
    if allowed is None:
        near = f"{graph} ORDER BY {distance} LIMIT {int(limit)}"
    else:
        ids = list(allowed)
        params = (ids, ids)
        outer = " WHERE c.id = ANY(?)"
        allowed_hashes = "embed_hash IN (SELECT embed_hash FROM chunks WHERE id = ANY(?))"
        if iterative:
            near = f"{graph} AND e.{allowed_hashes} ORDER BY {distance} LIMIT {int(limit)}"
        else:  # the filter cannot reach into the graph search: filter what it yields
            near = f"""SELECT * FROM ({graph} ORDER BY {distance} LIMIT {ef}) graph
                       WHERE {allowed_hashes} ORDER BY distance LIMIT {int(limit)}"""
    sql = f"""WITH near AS MATERIALIZED ({near})
              SELECT c.id, c.document_id, 1 - near.distance FROM near
              JOIN chunks c ON c.embed_hash = near.embed_hash{outer}
              ORDER BY near.distance, c.id"""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        # ef_search tops at 1000; the iterative scan goes on past it (and past a filter's
        # rejects) until `limit` rows are found, in roughly the right order: sorted after.
        conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
        if iterative:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(sql, params).fetchall()
    finally:
        if own:
            conn.execute("COMMIT")
    return [(int(c), int(d), float(s)) for c, d, s in rows]


_iterative: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _iterative_scan(conn: Connection) -> bool:
    """Whether the server's pgvector has the iterative index scan (0.8 and later), asked
    once per connection: the packaged servers for CPUs without AVX-512 carry an older one."""
    raw = conn.raw  # type: ignore[union-attr]
    if raw not in _iterative:
        # An HNSW search runs only where the extension is installed: it has a version.
        sql = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        (version,) = conn.execute(sql).fetchone()
        parts = tuple(int(p) for p in str(version).split(".")[:2] if p.isdigit())
        _iterative[raw] = parts >= (0, 8)
    return _iterative[raw]


def document_best(
    conn: Connection, model: str, query: np.ndarray, doc_id: int, allowed: Sequence[int] | None
) -> float | None:
    """A document's best cosine with the query over its chunks (exact: a few rows)."""
    dim = int(query.shape[0])
    sql = f"""SELECT MAX(1 - (e.vector::vector({dim}) <=> ?::vector({dim}))) FROM chunks c
              JOIN embeddings e ON e.model = ? AND e.dim = {dim}
              AND e.embed_hash = c.embed_hash WHERE c.document_id = ?"""
    params: tuple[object, ...] = (_query_literal(query), model, doc_id)
    if allowed is not None:
        sql += " AND c.id = ANY(?)"
        params += (list(allowed),)
    (best,) = conn.execute(sql, params).fetchone()
    return None if best is None else float(best)


def lacking(conn: Connection, model: str, dim: int, chunk_ids: Sequence[int]) -> set[int]:
    """Those of `chunk_ids` with no vector of (model, dim)."""
    rows = conn.execute(
        """SELECT c.id FROM chunks c WHERE c.id = ANY(?) AND NOT EXISTS (
           SELECT 1 FROM embeddings e WHERE e.model = ? AND e.dim = ?
           AND e.embed_hash = c.embed_hash)""",
        (list(chunk_ids), model, dim),
    ).fetchall()
    return {int(r[0]) for r in rows}
