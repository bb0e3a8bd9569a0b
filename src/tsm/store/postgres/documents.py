"""Writing documents on PostgreSQL, where several writers (two `tsm index` on two machines,
a daemon) may share one store. Each transaction that writes or removes documents first takes
`lock_paths` on their paths, then checks again what it decided before the lock
(indexing.py): a transaction-scoped advisory lock per path rather than a version column,
because the decision to write rests on the file as well as on the row (a writer must not
store content older than what another one stored; a vanished file must not be removed after
another writer saw it come back), and a lock keeps the whole read-check-write under one hold
without a new column in both schemas. Keyword rows follow their chunks by cascade."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..connect import Connection
    from ..protocol import ChunkValues

# Taken shared by every document writer, exclusive by vectors.drop_orphans: a text's vector
# must not be dropped as unused while a writer's uncommitted chunk still needs it. Advisory
# locks with two int4 keys live apart from the one-bigint keys of the paths.
WRITERS_LOCK = (0x74736D, 0x646F63)  # "tsm", "doc"


def lock_paths(conn: Connection, paths: Sequence[str]) -> None:
    """Locks are taken in sorted order, so two writers that each lock several paths cannot
    deadlock."""
    keys = sorted(set(paths))
    if len(keys) == 1:  # the common case in one round trip; the shared lock comes first
        conn.execute(
            "SELECT pg_advisory_xact_lock_shared(?, ?), "
            "pg_advisory_xact_lock(hashtextextended(?, 0))",
            (*WRITERS_LOCK, keys[0]),
        )
        return
    conn.execute("SELECT pg_advisory_xact_lock_shared(?, ?)", WRITERS_LOCK)
    if keys:  # unnest keeps the array's (sorted) order
        conn.execute(
            "SELECT count(pg_advisory_xact_lock(hashtextextended(p, 0))) FROM unnest(?::text[]) p",
            (keys,),
        )


def exclude_writers(conn: Connection) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(?, ?)", WRITERS_LOCK)


def lock_twin(conn: Connection, path: str) -> bool:
    row = conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", (path,))
    return bool(row.fetchone()[0])


def remove_path(conn: Connection, path: str) -> None:
    """One round trip: the keys cascade to chunks and their keyword rows."""
    conn.execute("DELETE FROM documents WHERE path = ?", (path,))


_CHUNK_COLUMNS = "document_id, chunk_index, section, page, line, chunk_date, text, embed_hash"


def insert_chunks(conn: Connection, values: Sequence[ChunkValues]) -> list[int]:
    """In one statement: a round trip per chunk is most of a small document's write time."""
    if not values:
        return []
    marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(values))
    found = conn.execute(
        f"INSERT INTO chunks({_CHUNK_COLUMNS}) VALUES {marks} RETURNING chunk_index, id",
        [field for v in values for field in v],
    ).fetchall()
    ids = dict(found)  # by chunk_index (text/chunk.py numbers them 0..n-1), not row order
    return [int(ids[v[1]]) for v in values]
