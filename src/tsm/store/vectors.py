"""Embeddings keyed by (model, hash of the embedded text): unchanged chunk text is never
embedded twice, and vectors of another model are simply not used (stale)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class PendingChunk:
    """A chunk whose text has no vector for the current model yet."""

    embed_hash: str
    title: str
    section: str
    text: str


def pending(conn: sqlite3.Connection, model: str, limit: int | None = None) -> list[PendingChunk]:
    """Distinct chunk texts that still lack a vector for `model`."""
    sql = """SELECT c.embed_hash, d.title, c.section, c.text FROM chunks c
             JOIN documents d ON d.id = c.document_id
             WHERE NOT EXISTS (SELECT 1 FROM embeddings e
                               WHERE e.model = ? AND e.embed_hash = c.embed_hash)
             GROUP BY c.embed_hash ORDER BY MIN(c.id)"""
    params: tuple[object, ...] = (model,)
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    return [PendingChunk(*row) for row in conn.execute(sql, params)]


def count_missing(conn: sqlite3.Connection, model: str | None) -> int:
    """Chunks (not distinct texts) that have no vector for `model`."""
    if model is None:
        return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
    return int(conn.execute(
        """SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (
               SELECT 1 FROM embeddings e WHERE e.model = ? AND e.embed_hash = c.embed_hash)""",
        (model,),
    ).fetchone()[0])


def store(conn: sqlite3.Connection, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
    """Insert vectors (float32) for the given hashes. Call inside a transaction."""
    conn.executemany(
        "INSERT OR REPLACE INTO embeddings(model, embed_hash, dim, vector) VALUES (?, ?, ?, ?)",
        [(model, h, int(v.shape[0]), v.astype("float32").tobytes()) for h, v in items],
    )


def drop_orphans(conn: sqlite3.Connection) -> int:
    """Delete vectors no chunk uses any more (edited or deleted text)."""
    cur = conn.execute(
        "DELETE FROM embeddings WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)"
    )
    return cur.rowcount


def drop_model(conn: sqlite3.Connection, model: str | None = None) -> None:
    """Forget vectors of one model (or all), for `tsm reindex vectors`."""
    if model is None:
        conn.execute("DELETE FROM embeddings")
    else:
        conn.execute("DELETE FROM embeddings WHERE model = ?", (model,))


def load_matrix(conn: sqlite3.Connection, model: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk ids, document ids, float32 matrix) of every chunk that has a vector."""
    import numpy as np

    rows = conn.execute(
        """SELECT c.id, c.document_id, e.vector FROM chunks c
           JOIN embeddings e ON e.model = ? AND e.embed_hash = c.embed_hash
           ORDER BY c.id""",
        (model,),
    ).fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    chunk_ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    doc_ids = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
    return chunk_ids, doc_ids, matrix.reshape(len(rows), -1)


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
