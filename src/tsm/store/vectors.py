"""Embeddings keyed by (model, hash of the embedded text): unchanged chunk text is never
embedded twice, and vectors of another model are simply not used (stale)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import chunks, documents, scope
from .connect import Connection
from .engine import store_of
from .meta import add_to_meta as add_to_meta
from .meta import get_meta as get_meta
from .meta import set_meta as set_meta
from .protocol import IN_LIST_IDS, NearestIndex
from .protocol import Stamp as Stamp

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
    (pgvector's HNSW, store/postgres/vectors.py) rather than a matrix held in memory."""
    return store_of(conn).nearest is not None


def nearest_index(conn: Connection) -> NearestIndex:
    """The store's own nearest-vector index (has_nearest_index says whether it has one)."""
    found = store_of(conn).nearest
    if found is None:
        raise TypeError(f"the {store_of(conn).name} store has no nearest-vector index")
    return found


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
    """Insert vectors (float32) for the given hashes, each checked by the next sweep of
    unused vectors (drop_orphans). Call inside a transaction. On
    PostgreSQL the column is pgvector's `vector`, and each (model, dimension) gets its HNSW
    index once it has enough vectors for a search to use one (ensure_hnsw)."""
    rows = store_of(conn).vectors.storable_rows(conn, model, items)
    # In one order for every writer: two that upsert the same texts at once (two machines
    # embedding a shared store) then wait for each other instead of deadlocking.
    rows.sort(key=lambda row: row[1])
    conn.executemany(
        """INSERT INTO embeddings(model, embed_hash, dim, vector) VALUES (?, ?, ?, ?)
           ON CONFLICT (model, embed_hash) DO UPDATE SET dim = excluded.dim,
           vector = excluded.vector""",
        rows,
    )
    # A text can lose its last chunk between being read for embedding and its vector being
    # stored, and that chunk's release be swept before this commits: each stored hash is
    # released too, so the next sweep (drop_orphans) keeps it only if a chunk uses it.
    conn.executemany(
        "INSERT INTO released_hashes(embed_hash) VALUES (?)", [(row[1],) for row in rows]
    )


def drop_orphans(conn: Connection) -> int:
    """Delete vectors no chunk uses any more (edited or deleted text). Only the hashes that
    chunks have let go of since the last sweep are looked at (`released_hashes`, migration
    m012), so the sweep costs what changed, not the size of the index. With none, nothing
    is locked. On PostgreSQL it first waits for the document writers in flight
    (documents.exclude_writers): a chunk a writer has not committed yet may need one of
    these vectors."""
    if conn.execute("SELECT 1 FROM released_hashes LIMIT 1").fetchone() is None:
        return 0
    documents.exclude_writers(conn)
    return store_of(conn).vectors.drop_released(conn)


def drop_model(conn: Connection, model: str | None = None) -> None:
    """Forget vectors of one model (or all), for `tsm reindex vectors`."""
    if model is None:
        conn.execute("DELETE FROM embeddings")
    else:
        conn.execute("DELETE FROM embeddings WHERE model = ?", (model,))
    store_of(conn).vectors.after_delete(conn)


def load_matrix(
    conn: Connection, model: str, chunk_ids: Sequence[int] | None = None, dim: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk ids, document ids, float32 matrix) of every chunk that has a vector, or of
    those among `chunk_ids`; with `dim`, only vectors of that dimension (the model may have
    changed its dimension under the same name: the other rows are not its vectors any more)."""
    return store_of(conn).vectors.load_rows(conn, model, chunk_ids, dim)


# Entries of the change log kept for searchers that lag behind; one further behind reloads.
CHANGE_LOG_KEEP = 200_000


def change_seq(conn: Connection) -> Stamp:
    """The change log's current stamp (migration m003); 0 on SQLite when it is empty. Equal
    stamps mean nothing changed. On SQLite the latest seq (an int); on PostgreSQL (oldest
    running transaction, entries since it, latest seq): writers there commit in any order,
    so an entry with a lower seq may become visible after a higher one."""
    return store_of(conn).changes.change_seq(conn)


def unchanged_since(conn: Connection, stamp: Stamp) -> bool:
    """Whether the change log has no entry a reader at `stamp` lacks, in one statement."""
    return store_of(conn).changes.unchanged_since(conn, stamp)


def changes_since(conn: Connection, seq: Stamp) -> tuple[list[int], Stamp] | None:
    """(chunk ids whose vector may have changed after stamp `seq`, the current stamp), or
    None when the log no longer reaches back to `seq` (pruned). Call inside a read
    transaction (store.connect.read_snapshot), so the list and the stamp come from one
    snapshot."""
    return store_of(conn).changes.changes_since(conn, seq)


def prune_changes(conn: Connection, keep: int = CHANGE_LOG_KEEP) -> int:
    """Forget all but the last `keep` log entries. Call inside a transaction."""
    return store_of(conn).changes.prune_changes(conn, keep)


def drop_all(conn: Connection) -> int:
    """Forget every vector of every model (`tsm reindex vectors`); returns how many. In a
    team store only the vectors this workspace's chunks use and no other workspace's chunk
    does: the rest are the team's, and embedding them again is not this root's call."""
    if scope.scope_of(conn) is None:
        count = int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
        drop_model(conn, None)
        return count
    documents.exclude_writers(conn)  # a chunk not committed yet may use one of them
    mine, params = scope.own(conn, "d")
    used_by = "chunks c JOIN documents d ON d.id = c.document_id"
    cur = conn.execute(
        f"""DELETE FROM embeddings WHERE embed_hash IN (SELECT c.embed_hash FROM {used_by}
                                                        WHERE {mine})
            AND NOT EXISTS (SELECT 1 FROM {used_by}
                            WHERE c.embed_hash = embeddings.embed_hash AND NOT ({mine}))""",
        (*params, *params),
    )
    if cur.rowcount:
        store_of(conn).vectors.after_delete(conn)
    return cur.rowcount
