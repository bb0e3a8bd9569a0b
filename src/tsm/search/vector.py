"""Vector signal: exact cosine search with numpy over a memory-resident matrix.

The matrix is cached per (database, model). A long-lived process (the daemon) loads it once
and then applies only what the vector change log (migration m003) says changed since: an
edited note costs a few rows, not a reload of every vector. Removed rows become tombstones
until they are a quarter of the matrix, then it is compacted. Brute force stays fast to
~10^5-10^6 rows (bench/vector_scaling.py).

On PostgreSQL, from ANN_MIN_ROWS vectors of the model on, a searcher holds no matrix: it asks
the HNSW index of store/postgres/vectors.py for the nearest texts (AnnIndex). Both kinds answer a
query with the same VectorMatches, which is all the search engine reads.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..store import chunks, vectors
from ..store.connect import Connection, read_snapshot
from ..store.vectors import Stamp
from .results import Match

if TYPE_CHECKING:
    import numpy as np

COMPACT_SHARE = 0.25  # compact once this share of rows are tombstones
RELOAD_SHARE = 0.5  # more changes than this share of rows: reload instead of patching


@dataclass(frozen=True)
class VectorMatches:
    """What a query's vector side needs (search/engine.py): the best chunk per document,
    best first; the query's mean cosine over the searchable chunks; a document's best
    cosine; which of some chunks have no vector."""

    ranked: list[Match]
    background: float | None
    doc_similarity: Callable[[int], float | None]
    lacking: Callable[[list[int]], set[int]]


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
    ) -> list[Match]:
        """Best chunk per document as (chunk_id, document_id, cosine), best first."""
        if self.matrix.shape[0] == 0:
            return []
        return self.best_per_document(self.similarities(query, allowed_chunks), limit)

    def match(
        self, conn: Connection, query: np.ndarray, depth: int, allowed: np.ndarray | None = None
    ) -> VectorMatches:
        """Exact: every row's cosine, so the mean and each document's best are exact too."""
        import numpy as np

        sims = self.similarities(query, allowed)
        searchable = sims[np.isfinite(sims)]
        missing = self.missing

        def doc_similarity(doc_id: int) -> float | None:
            mine = sims[self.doc_ids == doc_id]
            return float(mine.max()) if mine.size and np.isfinite(mine.max()) else None

        def lacking(chunk_ids: list[int]) -> set[int]:
            if missing == 0 or not chunk_ids:
                return set()
            rows = np.isin(self.chunk_ids, np.asarray(chunk_ids, dtype=np.int64))
            have = set(self.chunk_ids[rows & np.isfinite(sims)].tolist())
            return {c for c in chunk_ids if c not in have}

        return VectorMatches(
            self.best_per_document(sims, depth),
            float(searchable.mean()) if searchable.size else None,
            doc_similarity,
            lacking,
        )

    def best_per_document(self, sims: np.ndarray, limit: int) -> list[Match]:
        import numpy as np

        if len(sims) == 0:
            return []
        # Several chunks of one document may rank high: take extra rows, keep one per doc.
        take = min(len(sims), candidate_rows(limit))
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        top = top[np.isfinite(sims[top])]
        _, first = np.unique(self.doc_ids[top], return_index=True)  # best row of each doc
        best = top[np.sort(first)][:limit]
        return [
            Match(int(c), int(d), float(v))
            for c, d, v in zip(self.chunk_ids[best], self.doc_ids[best], sims[best], strict=True)
        ]


def candidate_rows(limit: int) -> int:
    """Rows to rank for `limit` documents: several chunks of one document may rank high."""
    return max(limit * 4, limit + 50)


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


# On PostgreSQL, from this many vectors of the model on (distinct texts of one dimension), a
# searcher asks the HNSW index instead of holding the matrix. bench/pg_vectors.py (results in
# bench/results/pg_vectors.md; 384-d e5 vectors plus noise, 200 real queries, depth 50, at
# load average 8-12 on 2 cores), p50 exact against HNSW: 1.6 / 15 ms at 10k rows, 8.8 / 15.5
# at 30k, 21.9 / 25.5 at 50k, 68 / 31 at 100k (recall@10 0.995-0.999 up to there), 427 / 43
# at 1M (recall@10 0.887; 0.949 with ef_search 400). Exact grows linearly, HNSW barely: they
# cross near 55k; at 50k the exact path is 4 ms faster but holds 75 MB of matrix per
# searcher (214 MB of RSS growth) and loads for 1.5 s at its start (1.5 GB and 54 s at 1M).
ANN_MIN_ROWS = 50_000
# Back to the exact path only below this share of ANN_MIN_ROWS, so that a store near the
# threshold does not load and drop its matrix by turns.
ANN_HYSTERESIS = 0.9
# hnsw.ef_search: the candidates the graph search keeps; at least the rows asked for.
ANN_EF_SEARCH = 200


@dataclass(frozen=True)
class AnnIndex:
    """PostgreSQL above ANN_MIN_ROWS: no matrix in memory; a query asks the HNSW index.

    What is approximated, against the exact path: the ranking is HNSW's (recall@10 in
    bench/results/pg_vectors.md); the background (the mean cosine over the searchable chunks)
    is the query's dot product with the mean vector of every chunk of the model, exact
    unless a filter is active and lets more than ANN_MIN_ROWS chunks through (then it is the
    unfiltered mean). That mean, `missing` and `live_rows` are the statistics the writers
    keep (store/postgres/vectors.py summary), read again whenever the change log moved. A
    document's best cosine and the chunks without a vector are exact (a query each)."""

    model: str
    dim: int
    stamp: Stamp
    live_rows: int
    total_chunks: int
    mean: np.ndarray | None

    @property
    def missing(self) -> int:
        return max(0, self.total_chunks - self.live_rows)

    def match(
        self, conn: Connection, query: np.ndarray, depth: int, allowed: np.ndarray | None = None
    ) -> VectorMatches:
        import numpy as np

        ann = vectors.nearest_index(conn)
        query = query.astype(np.float32)
        ids = None if allowed is None else allowed.tolist()
        rows = ann.nearest(conn, self.model, query, candidate_rows(depth), ANN_EF_SEARCH, ids)
        ranked: list[Match] = []
        seen: set[int] = set()
        for chunk_id, doc_id, similarity in sorted(rows, key=lambda r: -r[2]):
            if doc_id not in seen:
                seen.add(doc_id)
                ranked.append(Match(chunk_id, doc_id, similarity))
        mean = self.mean
        if ids is not None and len(ids) <= ANN_MIN_ROWS:  # the filtered rows' own mean
            mean = ann.mean_vector(conn, self.model, self.dim, ids)
        background = float(mean @ query) if mean is not None else None
        model, missing = self.model, self.missing

        @functools.cache
        def doc_similarity(doc_id: int) -> float | None:
            return ann.document_best(conn, model, query, doc_id, ids)

        def lacking(chunk_ids: list[int]) -> set[int]:
            if missing == 0 or not chunk_ids:
                return set()
            return ann.lacking(conn, model, int(query.shape[0]), chunk_ids)

        return VectorMatches(ranked[:depth], background, doc_similarity, lacking)


_cache: dict[tuple[str, str], VectorIndex | AnnIndex] = {}
_lock = threading.Lock()


def load_index_if_loaded(
    conn: Connection,
    db_key: str,
    model: str,
    dim: int | None = None,
    unchanged: Callable[[Stamp], bool] | None = None,
) -> VectorIndex | AnnIndex | None:
    """`load_index` for a search that must not wait while the daemon loads the vectors (a
    full load of 10^5 rows takes seconds): None while nothing is cached yet, and the cached
    snapshot as it is while another thread updates it."""
    cached = _cache.get((db_key, model))
    if cached is None or (dim is not None and _dim(cached) not in (None, dim)):
        return None
    if _lock.locked():
        return cached
    return load_index(conn, db_key, model, dim, unchanged)


def load_index(
    conn: Connection,
    db_key: str,
    model: str,
    dim: int | None = None,
    unchanged: Callable[[Stamp], bool] | None = None,
) -> VectorIndex | AnnIndex:
    """The cached matrix for this DB and model, brought up to date with the change log; on
    PostgreSQL from ANN_MIN_ROWS vectors on, the HNSW index's handle instead. `dim`, the
    query's dimension, leaves out vectors the model made with another one (and is needed
    for the HNSW path, whose index is per dimension). `unchanged` answers whether the log
    moved since a stamp (a search's chunkmap.LogCheck), else the store does."""
    key = (db_key, model)
    if unchanged is None:
        unchanged = functools.partial(vectors.unchanged_since, conn)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and dim is not None and _dim(cached) not in (None, dim):
            cached = None  # the model's dimension changed: none of those rows serve
        if cached is not None and unchanged(cached.stamp):
            return cached
        with read_snapshot(conn):  # the log and the rows it points at
            index: VectorIndex | AnnIndex | None = None
            if isinstance(cached, VectorIndex):
                index = _refreshed(conn, model, cached, dim)
            if vectors.has_nearest_index(conn) and dim is not None:
                if index is None or index.live_rows >= ANN_MIN_ROWS:
                    was_ann = isinstance(cached, AnnIndex)
                    floor = ANN_MIN_ROWS * (ANN_HYSTERESIS if was_ann else 1.0)
                    index = _ann(conn, model, dim, floor) or index
            if index is None:
                index = _loaded(conn, model, dim)
        _cache[key] = index
        return index


def _dim(index: VectorIndex | AnnIndex) -> int | None:
    if isinstance(index, AnnIndex):
        return index.dim
    return int(index.matrix.shape[1]) if index.matrix.size else None


def _ann(conn: Connection, model: str, dim: int, floor: float) -> AnnIndex | None:
    """The HNSW path's handle when (model, dim) has its index and at least `floor` chunks
    with a vector of it."""
    ann = vectors.nearest_index(conn)
    if not ann.has_hnsw(conn, model, dim):
        return None  # vectors stored before the index existed: the exact path serves them
    stamp = vectors.change_seq(conn)
    have, total, mean = ann.summary(conn, model, dim)
    if have < floor:
        return None
    return AnnIndex(model, dim, stamp, have, total, mean)


def _loaded(conn: Connection, model: str, dim: int | None = None) -> VectorIndex:
    stamp = vectors.change_seq(conn)
    chunk_ids, doc_ids, matrix = vectors.load_matrix(conn, model, dim=dim)
    return VectorIndex(chunk_ids, doc_ids, matrix, stamp, chunks.count(conn), None, matrix)


def _refreshed(
    conn: Connection, model: str, old: VectorIndex, dim: int | None = None
) -> VectorIndex | None:
    """`old` with the logged changes applied, or None when a full load is the better deal."""
    import numpy as np

    changes = vectors.changes_since(conn, old.stamp)
    if changes is None or len(changes[0]) > RELOAD_SHARE * max(old.matrix.shape[0], 1000):
        return None
    changed, stamp = changes
    ids, docs, rows = vectors.load_matrix(conn, model, changed, dim)
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
