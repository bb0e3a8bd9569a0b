"""Vector signal: exact cosine search with numpy over a memory-resident matrix.

The matrix is cached per (database, model) and reloaded only when chunks or vectors change,
so a long-lived process (the daemon) pays the load once. Brute force stays fast to ~10^5-10^6
rows (see bench/vector_scaling.py); past that an ANN index can implement the same `nearest`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store import vectors

if TYPE_CHECKING:
    import numpy as np


@dataclass
class VectorIndex:
    chunk_ids: np.ndarray
    doc_ids: np.ndarray
    matrix: np.ndarray
    stamp: tuple[int, ...]
    total_chunks: int = 0  # chunks in the index when loaded; the rest lack vectors

    @property
    def missing(self) -> int:
        return max(0, self.total_chunks - int(self.matrix.shape[0]))

    def nearest(self, query: np.ndarray, limit: int,
                allowed_chunks: np.ndarray | None = None) -> list[tuple[int, int, float]]:
        """Best chunk per document as (chunk_id, document_id, cosine), best first."""
        import numpy as np

        if self.matrix.shape[0] == 0:
            return []
        sims = self.matrix @ query.astype(np.float32)
        if allowed_chunks is not None:
            sims = np.where(np.isin(self.chunk_ids, allowed_chunks), sims, -np.inf)
        # Several chunks of one document may rank high: take extra rows, keep one per doc.
        take = min(len(sims), max(limit * 4, limit + 50))
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        top = top[np.isfinite(sims[top])]
        _, first = np.unique(self.doc_ids[top], return_index=True)  # best row of each doc
        best = top[np.sort(first)][:limit]
        return [(int(c), int(d), float(v)) for c, d, v in
                zip(self.chunk_ids[best], self.doc_ids[best], sims[best], strict=True)]


_cache: dict[tuple[str, str], VectorIndex] = {}
_lock = threading.Lock()


def _stamp(db_path: str) -> tuple[int, ...]:
    """Changes with every commit: the WAL file grows (or the DB file changes when the WAL is
    checkpointed). Two stat() calls instead of counting rows on every search."""
    stamp: list[int] = []
    for path in (db_path, db_path + "-wal"):
        try:
            st = os.stat(path)
            stamp += [st.st_mtime_ns, st.st_size]
        except OSError:
            stamp += [0, 0]
    return tuple(stamp)


def load_index(conn: sqlite3.Connection, db_key: str, model: str) -> VectorIndex:
    """The cached matrix for this DB and model, reloaded if the DB changed since."""
    stamp = _stamp(db_key)
    with _lock:
        cached = _cache.get((db_key, model))
        if cached is not None and cached.stamp == stamp:
            return cached
        chunk_ids, doc_ids, matrix = vectors.load_matrix(conn, model)
        total = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        index = VectorIndex(chunk_ids, doc_ids, matrix, stamp, total)
        _cache[(db_key, model)] = index
        return index
