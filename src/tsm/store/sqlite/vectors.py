"""Vectors in SQLite: each a float32 BLOB, searched from a matrix held in memory
(search/vector.py); SQLite has no nearest-vector index of its own."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..protocol import IN_LIST_IDS
from .dialect import begin_snapshot

if TYPE_CHECKING:
    import numpy as np

    from ..connect import Connection
    from ..protocol import VectorRow


def storable_rows(
    conn: Connection, model: str, items: Iterable[tuple[str, np.ndarray]]
) -> list[VectorRow]:
    return [(model, h, int(v.shape[0]), v.astype("float32").tobytes()) for h, v in items]


def after_delete(conn: Connection) -> None:
    """Nothing to do: no index hangs from a model's vectors."""


def drop_released(conn: Connection) -> int:
    """vectors.drop_orphans on SQLite, whose writers are serial: the released hashes read
    here are all there are until this transaction ends."""
    cur = conn.execute(
        """DELETE FROM embeddings WHERE embed_hash IN (SELECT embed_hash FROM released_hashes)
           AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = embeddings.embed_hash)"""
    )
    conn.execute("DELETE FROM released_hashes")
    return cur.rowcount


def exported_column(conn: Connection) -> str:
    """What `tsm export` reads of `embeddings`: the float32 bytes as stored."""
    return "vector"


_MATRIX_ROWS = """SELECT c.id, c.document_id, e.vector FROM chunks c
                  {join} embeddings e ON e.model = ? AND e.embed_hash = c.embed_hash"""


def changed_rows_sql(count: int) -> str:
    """The rows of `count` chunk ids. CROSS JOIN makes SQLite look the few chunks up first:
    left to choose, from a few dozen ids on it scans every vector of the model instead
    (0.9 s for 32 ids at 100k chunks, against 10 ms for 500 this way). PostgreSQL has no
    `CROSS JOIN ... ON` (store/postgres/vectors.py has its form)."""
    return _MATRIX_ROWS.format(join="CROSS JOIN") + f" WHERE c.id IN ({','.join('?' * count)})"


def load_rows(
    conn: Connection, model: str, chunk_ids: Sequence[int] | None, dim: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    where, extra = (" AND e.dim = ?", (dim,)) if dim is not None else ("", ())
    if chunk_ids is None:
        return _whole_matrix(conn, where, (model, *extra))
    rows = []
    ids = sorted(set(chunk_ids))
    for start in range(0, len(ids), IN_LIST_IDS):
        part = ids[start : start + IN_LIST_IDS]
        rows += conn.execute(changed_rows_sql(len(part)) + where, (model, *part, *extra)).fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    found = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    doc_ids = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
    return found, doc_ids, matrix.reshape(len(rows), -1)


# Rows read at a time when the whole matrix is loaded.
ROWS_PER_FETCH = 1024


def _whole_matrix(
    conn: Connection, where: str, params: tuple[Any, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every row, counted first and then read ROWS_PER_FETCH at a time straight into one
    matrix of that size, both from one snapshot. Holding every row's BLOB as a Python bytes
    object and joining them took twice the matrix at once, and the allocator kept much of
    the freed heap in the process's RSS afterwards."""
    import numpy as np

    rows = _MATRIX_ROWS.format(join="JOIN") + " WHERE 1 = 1" + where
    count = rows.replace("c.id, c.document_id, e.vector", "count(*)", 1)
    own = not conn.in_transaction
    if own:
        conn.execute(begin_snapshot)  # the count and the rows must agree
    try:
        (total,) = conn.execute(count, params).fetchone()
        cursor = iter(conn.execute(rows + " ORDER BY c.id", params))
        ids, docs = np.empty(total, np.int64), np.empty(total, np.int64)
        matrix: np.ndarray | None = None
        row = 0
        while batch := list(islice(cursor, ROWS_PER_FETCH)):
            block = np.frombuffer(b"".join(r[2] for r in batch), dtype=np.float32)
            block = block.reshape(len(batch), -1)
            if matrix is None:
                matrix = np.empty((total, block.shape[1]), dtype=np.float32)
            end = row + len(batch)
            ids[row:end] = [r[0] for r in batch]
            docs[row:end] = [r[1] for r in batch]
            matrix[row:end] = block
            row = end
    finally:
        if own:
            conn.execute("COMMIT")
    if matrix is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    return ids, docs, matrix
