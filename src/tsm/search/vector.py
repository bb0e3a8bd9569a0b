"""Vector signal: exact cosine search with numpy over a memory-resident matrix.

The matrix is cached per (database, model). A long-lived process (the daemon) loads it once
and then applies only what the vector change log (migration m003) says changed since: an
edited note costs a few rows, not a reload of every vector. Removed rows become tombstones
until they are a quarter of the matrix, then it is compacted. Brute force stays fast to
~10^5-10^6 rows (bench/vector_scaling.py); past that an ANN index can implement the same
`nearest`.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..store import chunks, vectors
from ..store.connect import Connection, read_snapshot
from ..store.vectors import Stamp

if TYPE_CHECKING:
    import numpy as np

COMPACT_SHARE = 0.25  # compact once this share of rows are tombstones
RELOAD_SHARE = 0.5  # more changes than this share of rows: reload instead of patching


@dataclass(frozen=True)
class VectorIndex:
    """An immutable snapshot: rows appended later live beyond `matrix`'s end, tombstones are
    new arrays, so a search may keep using a snapshot while another thread refreshes it."""

    chunk_ids: np.ndarray  # (n,) int64
    doc_ids: np.ndarray  # (n,) int64
    matrix: np.ndarray  # (n, dim) float32 view of `buffer`
    stamp: Stamp  # the change-log stamp this snapshot reflects
    total_chunks: int = 0  # chunks in the index; those without a vector are "missing"
    dead: np.ndarray | None = None  # positions of removed rows (tombstones)
    buffer: np.ndarray | None = None  # (capacity, dim): room to append without copying

    @property
    def live_rows(self) -> int:
        return int(self.matrix.shape[0]) - (0 if self.dead is None else len(self.dead))

    @property
    def missing(self) -> int:
        return max(0, self.total_chunks - self.live_rows)

    def similarities(
        self, query: np.ndarray, allowed_chunks: np.ndarray | None = None
    ) -> np.ndarray:
        """Cosine of every row with the query; -inf for removed or filtered-out rows."""
        import numpy as np

        sims = _product(self.matrix, query.astype(np.float32))
        if self.dead is not None and len(self.dead):
            sims[self.dead] = -np.inf
        if allowed_chunks is not None:
            sims = np.where(np.isin(self.chunk_ids, allowed_chunks), sims, -np.inf)
        return sims

    def nearest(
        self, query: np.ndarray, limit: int, allowed_chunks: np.ndarray | None = None
    ) -> list[tuple[int, int, float]]:
        """Best chunk per document as (chunk_id, document_id, cosine), best first."""
        if self.matrix.shape[0] == 0:
            return []
        return self.best_per_document(self.similarities(query, allowed_chunks), limit)

    def best_per_document(self, sims: np.ndarray, limit: int) -> list[tuple[int, int, float]]:
        import numpy as np

        if len(sims) == 0:
            return []
        # Several chunks of one document may rank high: take extra rows, keep one per doc.
        take = min(len(sims), max(limit * 4, limit + 50))
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        top = top[np.isfinite(sims[top])]
        _, first = np.unique(self.doc_ids[top], return_index=True)  # best row of each doc
        best = top[np.sort(first)][:limit]
        return [
            (int(c), int(d), float(v))
            for c, d, v in zip(self.chunk_ids[best], self.doc_ids[best], sims[best], strict=True)
        ]


# From this many rows on, the matrix-vector product runs as two halves on two threads
# (numpy releases the GIL): it is bound by memory bandwidth, which one core cannot fill.
PARALLEL_ROWS = 50_000


def _product(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    import numpy as np

    rows = matrix.shape[0]
    if rows < PARALLEL_ROWS:
        return matrix @ query
    out = np.empty(rows, dtype=np.float32)
    half = rows // 2
    other = _halves().submit(np.matmul, matrix[half:], query, out=out[half:])
    np.matmul(matrix[:half], query, out=out[:half])
    other.result()
    return out


@functools.cache
def _halves() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="tsm-matvec")


_cache: dict[tuple[str, str], VectorIndex] = {}
_lock = threading.Lock()


def load_index(conn: Connection, db_key: str, model: str) -> VectorIndex:
    """The cached matrix for this DB and model, brought up to date with the change log."""
    with _lock:
        cached = _cache.get((db_key, model))
        if cached is not None and cached.stamp == vectors.change_seq(conn):
            return cached
        with read_snapshot(conn):  # the log and the rows it points at
            index = _refreshed(conn, model, cached) if cached is not None else None
            if index is None:
                index = _loaded(conn, model)
        _cache[(db_key, model)] = index
        return index


def _loaded(conn: Connection, model: str) -> VectorIndex:
    stamp = vectors.change_seq(conn)
    chunk_ids, doc_ids, matrix = vectors.load_matrix(conn, model)
    return VectorIndex(chunk_ids, doc_ids, matrix, stamp, chunks.count(conn), None, matrix)


def _refreshed(conn: Connection, model: str, old: VectorIndex) -> VectorIndex | None:
    """`old` with the logged changes applied, or None when a full load is the better deal."""
    import numpy as np

    changes = vectors.changes_since(conn, old.stamp)
    if changes is None or len(changes[0]) > RELOAD_SHARE * max(old.matrix.shape[0], 1000):
        return None
    changed, stamp = changes
    ids, docs, rows = vectors.load_matrix(conn, model, changed)
    if rows.size and old.matrix.size and rows.shape[1] != old.matrix.shape[1]:
        return None  # another dimension: the model changed under the same name
    stale = np.flatnonzero(np.isin(old.chunk_ids, np.asarray(changed, dtype=np.int64)))
    dead = stale if old.dead is None else np.union1d(old.dead, stale)
    n, add = old.matrix.shape[0], rows.shape[0]
    buffer = old.buffer if old.buffer is not None else old.matrix
    if add and (buffer.shape[0] < n + add or buffer.ndim != 2 or buffer.shape[1] != rows.shape[1]):
        dim = rows.shape[1]
        grown = np.empty((max(int((n + add) * 1.5), 1024), dim), dtype=np.float32)
        if n:
            grown[:n] = old.matrix
        buffer = grown
    if add:
        buffer[n : n + add] = rows
    index = VectorIndex(
        np.concatenate([old.chunk_ids, ids]),
        np.concatenate([old.doc_ids, docs]),
        buffer[: n + add],
        stamp,
        chunks.count(conn),
        dead,
        buffer,
    )
    if len(dead) > COMPACT_SHARE * max(index.matrix.shape[0], 1):
        index = _compacted(index)
    return index


def _compacted(index: VectorIndex) -> VectorIndex:
    import numpy as np

    keep = np.ones(index.matrix.shape[0], dtype=bool)
    if index.dead is not None:
        keep[index.dead] = False
    matrix = np.ascontiguousarray(index.matrix[keep])
    return replace(
        index,
        chunk_ids=index.chunk_ids[keep],
        doc_ids=index.doc_ids[keep],
        matrix=matrix,
        dead=None,
        buffer=matrix,
    )
