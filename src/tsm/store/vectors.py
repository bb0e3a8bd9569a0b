"""Embeddings keyed by (model, hash of the embedded text): unchanged chunk text is never
embedded twice, and vectors of another model are simply not used (stale)."""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import chunks, documents
from .connect import Connection, is_postgres

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class PendingChunk:
    """A chunk whose text has no vector for the current model yet."""

    embed_hash: str
    title: str
    section: str
    text: str


def has_nearest_index(conn: Connection) -> bool:
    """Whether the store can answer a nearest-vector query from an index of its own
    (pgvector's HNSW, store/pg_vectors.py) rather than a matrix held in memory."""
    return is_postgres(conn)


def pending(conn: Connection, model: str, limit: int | None = None) -> list[PendingChunk]:
    """Distinct chunk texts that still lack a vector for `model`."""
    sql = """SELECT c.embed_hash, d.title, c.section, c.text FROM chunks c
             JOIN documents d ON d.id = c.document_id
             WHERE c.id IN (SELECT MIN(p.id) FROM chunks p WHERE NOT EXISTS (
                                SELECT 1 FROM embeddings e
                                WHERE e.model = ? AND e.embed_hash = p.embed_hash)
                            GROUP BY p.embed_hash)
             ORDER BY c.id"""
    params: tuple[object, ...] = (model,)
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    return [PendingChunk(*row) for row in conn.execute(sql, params)]


def pending_ids(conn: Connection, model: str) -> list[int]:
    """One chunk id per distinct text that lacks a vector for `model`, in id order: a whole
    vault's worth is a small list, and `pending_texts` reads each batch's texts when it is
    embedded, so a long run never holds every text at once."""
    sql = """SELECT MIN(p.id) FROM chunks p WHERE NOT EXISTS (
                 SELECT 1 FROM embeddings e WHERE e.model = ? AND e.embed_hash = p.embed_hash)
             GROUP BY p.embed_hash ORDER BY 1"""
    return [int(row[0]) for row in conn.execute(sql, (model,))]


def pending_texts(conn: Connection, ids: Sequence[int]) -> list[PendingChunk]:
    """The texts of chunks from `pending_ids` (those deleted since are left out), in id
    order, read IN_LIST_IDS at a time: `embedding.batch_size` can be any number, a
    statement's parameters cannot (PostgreSQL: 65,535)."""
    out: list[PendingChunk] = []
    ordered = sorted(ids)
    for start in range(0, len(ordered), IN_LIST_IDS):
        part = ordered[start : start + IN_LIST_IDS]
        sql = f"""SELECT c.embed_hash, d.title, c.section, c.text FROM chunks c
                  JOIN documents d ON d.id = c.document_id
                  WHERE c.id IN ({", ".join("?" * len(part))}) ORDER BY c.id"""
        out += [PendingChunk(*row) for row in conn.execute(sql, tuple(part))]
    return out


IN_LIST_IDS = 500  # ids per `IN (...)` list


def count_missing(conn: Connection, model: str | None) -> int:
    """Chunks (not distinct texts) that have no vector for `model`."""
    if model is None:
        return chunks.count(conn)
    return int(
        conn.execute(
            """SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (
               SELECT 1 FROM embeddings e WHERE e.model = ? AND e.embed_hash = c.embed_hash)""",
            (model,),
        ).fetchone()[0]
    )


@dataclass(frozen=True)
class VectorCoverage:
    """How far the chunks are embedded by one model (`tsm doctor`'s vectors section)."""

    chunks: int  # every chunk
    missing: int  # chunks with no vector from the model
    other_models: int  # vectors stored for any other model: unused by searches


def vector_coverage(conn: Connection, model: str | None) -> VectorCoverage:
    """The coverage by `model`; None (no model known) counts every chunk as missing and
    every vector as another model's."""
    total = chunks.count(conn)
    (other,) = conn.execute(
        "SELECT COUNT(*) FROM embeddings WHERE model != ?", (model or "",)
    ).fetchone()
    return VectorCoverage(total, count_missing(conn, model), int(other))


def copy_reusable(conn: sqlite3.Connection, schema: str) -> int:
    """Copy from the attached DB `schema` the vectors of every text `conn`'s chunks still
    have: vectors are keyed by (model, text hash), so they are still right. The model's name
    and dimension come along in meta, unless `conn` has its own. Call inside a transaction;
    returns the number of vectors copied (the rowcount of the insert alone: total_changes
    would add the change log's rows, written by trigger, and the meta rows)."""
    copied = conn.execute(
        f"""INSERT OR IGNORE INTO embeddings(model, embed_hash, dim, vector)
            SELECT model, embed_hash, dim, vector FROM {schema}.embeddings
            WHERE embed_hash IN (SELECT embed_hash FROM chunks)
            AND typeof(model) = 'text' AND typeof(embed_hash) = 'text'
            AND typeof(dim) = 'integer' AND dim > 0
            AND typeof(vector) = 'blob' AND length(vector) = dim * 4"""
    ).rowcount  # a damaged (or planted) old index's misshapen vectors stay behind
    conn.execute(
        f"INSERT OR IGNORE INTO meta(key, value) SELECT key, value FROM {schema}.meta "
        "WHERE key = 'model_name' AND typeof(value) = 'text'"
    )
    conn.execute(
        f"INSERT OR IGNORE INTO meta(key, value) SELECT key, value FROM {schema}.meta "
        "WHERE key = 'embedding_dim' AND typeof(value) = 'text' "
        "AND value GLOB '[1-9]*' AND NOT value GLOB '*[^0-9]*'"
    )
    return copied


def store(conn: Connection, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
    """Insert vectors (float32) for the given hashes. Call inside a transaction. On
    PostgreSQL the column is pgvector's `vector`, and each (model, dimension) gets its HNSW
    index once it has enough vectors for a search to use one (ensure_hnsw)."""
    if is_postgres(conn):
        from collections import Counter

        from .postgres.vectors import PgVector, ensure_hnsw

        rows: list[tuple[str, str, int, object]] = [
            (model, h, int(v.shape[0]), PgVector(v)) for h, v in items
        ]
        for dim, adding in sorted(Counter(row[2] for row in rows).items()):
            ensure_hnsw(conn, model, dim, adding)
    else:
        rows = [(model, h, int(v.shape[0]), v.astype("float32").tobytes()) for h, v in items]
    # In one order for every writer: two that upsert the same texts at once (two machines
    # embedding a shared store) then wait for each other instead of deadlocking.
    rows.sort(key=lambda row: row[1])
    conn.executemany(
        """INSERT INTO embeddings(model, embed_hash, dim, vector) VALUES (?, ?, ?, ?)
           ON CONFLICT (model, embed_hash) DO UPDATE SET dim = excluded.dim,
           vector = excluded.vector""",
        rows,
    )


def drop_orphans(conn: Connection) -> int:
    """Delete vectors no chunk uses any more (edited or deleted text). On PostgreSQL it
    first waits for the document writers in flight (documents.exclude_writers): a chunk a
    writer has not committed yet may need one of these vectors."""
    documents.exclude_writers(conn)
    cur = conn.execute(
        "DELETE FROM embeddings WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)"
    )
    if is_postgres(conn) and cur.rowcount:
        from .postgres.vectors import drop_unused_hnsw

        drop_unused_hnsw(conn)  # a dimension the model no longer has
    return cur.rowcount


def drop_model(conn: Connection, model: str | None = None) -> None:
    """Forget vectors of one model (or all), for `tsm reindex vectors`."""
    if model is None:
        conn.execute("DELETE FROM embeddings")
    else:
        conn.execute("DELETE FROM embeddings WHERE model = ?", (model,))
    if is_postgres(conn):
        from .postgres.vectors import drop_unused_hnsw

        drop_unused_hnsw(conn)


_MATRIX_ROWS = """SELECT c.id, c.document_id, e.vector FROM chunks c
                  {join} embeddings e ON e.model = ? AND e.embed_hash = c.embed_hash"""


def _changed_rows_sql(count: int) -> str:
    """The rows of `count` chunk ids. CROSS JOIN makes SQLite look the few chunks up first:
    left to choose, from a few dozen ids on it scans every vector of the model instead
    (0.9 s for 32 ids at 100k chunks, against 10 ms for 500 this way). PostgreSQL has no
    `CROSS JOIN ... ON` (store/pg_vectors.py has its form)."""
    return _MATRIX_ROWS.format(join="CROSS JOIN") + f" WHERE c.id IN ({','.join('?' * count)})"


def load_matrix(
    conn: Connection, model: str, chunk_ids: Sequence[int] | None = None, dim: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk ids, document ids, float32 matrix) of every chunk that has a vector, or of
    those among `chunk_ids`; with `dim`, only vectors of that dimension (the model may have
    changed its dimension under the same name: the other rows are not its vectors any more)."""
    import numpy as np

    if is_postgres(conn):
        from .postgres.vectors import load_rows

        return load_rows(conn, model, chunk_ids, dim)
    where, extra = (" AND e.dim = ?", (dim,)) if dim is not None else ("", ())
    if chunk_ids is None:
        rows = conn.execute(
            _MATRIX_ROWS.format(join="JOIN") + " WHERE 1 = 1" + where + " ORDER BY c.id",
            (model, *extra),
        ).fetchall()
    else:
        rows = []
        ids = sorted(set(chunk_ids))
        for start in range(0, len(ids), IN_LIST_IDS):
            part = ids[start : start + IN_LIST_IDS]
            rows += conn.execute(
                _changed_rows_sql(len(part)) + where, (model, *part, *extra)
            ).fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    found = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    doc_ids = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
    return found, doc_ids, matrix.reshape(len(rows), -1)


# Entries of the change log kept for searchers that lag behind; one further behind reloads.
CHANGE_LOG_KEEP = 200_000


Stamp = Hashable
"""How far a reader has read the change log: on SQLite the latest seq (an int); on
PostgreSQL (oldest running transaction, entries since it, latest seq): writers there commit
in any order, so an entry with a lower seq may become visible after a higher one."""


def change_seq(conn: Connection) -> Stamp:
    """The change log's current stamp (migration m003); 0 on SQLite when it is empty. Equal
    stamps mean nothing changed."""
    if is_postgres(conn):
        xmin, since, latest = conn.execute(_PG_STAMP).fetchone()
        return (int(xmin), int(since), int(latest))
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'").fetchone()
    return int(row[0]) if row else 0


_PG_STAMP = """WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
    SELECT s.xmin::text::bigint,
           (SELECT COUNT(*) FROM vector_changes WHERE xid >= s.xmin),
           (SELECT COALESCE(MAX(seq), 0) FROM vector_changes)
    FROM s"""


def unchanged_since(conn: Connection, stamp: Stamp) -> bool:
    """Whether the change log has no entry a reader at `stamp` lacks, in one statement. On
    PostgreSQL the stamp's oldest running transaction moves whenever any transaction on the
    server ends, so comparing stamps would reload on every search of a busy server; instead
    the entries from that transaction on are counted again: only new ones raise the count,
    and only pruning (which is checked) removes any."""
    if not is_postgres(conn):
        return stamp == change_seq(conn)
    if not isinstance(stamp, tuple) or len(stamp) != 3:
        return False
    xmin, since, latest = stamp
    now_since, now_latest, pruned = conn.execute(_PG_SINCE, (str(xmin),)).fetchone()
    if pruned is not None and int(pruned) >= xmin:
        return False
    return (int(now_since), int(now_latest)) == (since, latest)


_PG_SINCE = """SELECT (SELECT COUNT(*) FROM vector_changes WHERE xid >= ?::text::xid8),
           (SELECT COALESCE(MAX(seq), 0) FROM vector_changes),
           (SELECT value FROM meta WHERE key = 'vector_changes_pruned_xid')"""


def changes_since(conn: Connection, seq: Stamp) -> tuple[list[int], Stamp] | None:
    """(chunk ids whose vector may have changed after stamp `seq`, the current stamp), or
    None when the log no longer reaches back to `seq` (pruned). Call inside a read
    transaction (store.connect.read_snapshot), so the list and the stamp come from one
    snapshot."""
    if is_postgres(conn):
        return _pg_changes_since(conn, seq)
    assert isinstance(seq, int)
    latest = change_seq(conn)
    assert isinstance(latest, int)
    if latest == seq:
        return [], seq
    oldest = conn.execute("SELECT MIN(seq) FROM vector_changes").fetchone()[0]
    if oldest is None or oldest > seq + 1:
        return None
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT chunk_id FROM vector_changes WHERE seq > ? AND seq <= ?", (seq, latest)
        )
    ]
    return ids, latest


def _pg_changes_since(conn: Connection, stamp: Stamp) -> tuple[list[int], Stamp] | None:
    """Every transaction older than the stamp's oldest running one had ended when the stamp
    was read, and its entries were applied then; so the entries of transactions from that
    one on are all a reader may lack (some it has seen: applying them twice is harmless)."""
    if not isinstance(stamp, tuple) or len(stamp) != 3:
        return None  # a stamp of another store
    pruned = get_meta(conn, "vector_changes_pruned_xid")
    if pruned is not None and int(pruned) >= stamp[0]:
        return None
    current = change_seq(conn)
    if current == stamp:
        return [], stamp
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT chunk_id FROM vector_changes WHERE xid >= ?::text::xid8",
            (str(stamp[0]),),
        )
    ]
    return ids, current


def prune_changes(conn: Connection, keep: int = CHANGE_LOG_KEEP) -> int:
    """Forget all but the last `keep` log entries. Call inside a transaction."""
    if is_postgres(conn):
        (latest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_changes").fetchone()
        (newest_xid,) = conn.execute(
            "SELECT MAX(xid)::text FROM vector_changes WHERE seq <= ?", (latest - keep,)
        ).fetchone()
        if newest_xid is None:
            return 0
        set_meta(conn, "vector_changes_pruned_xid", newest_xid)
        return conn.execute(
            "DELETE FROM vector_changes WHERE xid <= ?::text::xid8", (newest_xid,)
        ).rowcount
    seq = change_seq(conn)
    assert isinstance(seq, int)
    return conn.execute("DELETE FROM vector_changes WHERE seq <= ?", (seq - keep,)).rowcount


def get_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def add_to_meta(conn: Connection, key: str, n: int) -> None:
    """Add `n` to a counter kept in meta, in one statement (two writers never lose a count)."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
        "SET value = CAST(CAST(meta.value AS INTEGER) + ? AS TEXT)",
        (key, str(n), n),
    )


def drop_all(conn: Connection) -> int:
    """Forget every vector of every model; returns how many there were."""
    count = int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    drop_model(conn, None)
    return count
