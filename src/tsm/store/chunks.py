"""Which document each chunk belongs to, read for search/chunkmap.py's in-memory map (chunk id
→ document id), loaded whole once and patched from the change log (store/vectors.py); and
how many chunks there are."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from .connect import Connection

# Chunk ids per statement, a bound variable each (SQLite before 3.32 allowed 999).
_BATCH = 500


class ChunkDocument(NamedTuple):
    """A chunk and the document it belongs to."""

    chunk_id: int
    document_id: int


def count(conn: Connection) -> int:
    """The number of chunks in the index: what vector coverage (`tsm status`, the vector
    signal's share of chunks with a vector) and the keyword IDF are counted against."""
    return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])


def max_chunk_id(conn: Connection) -> int:
    """The largest chunk id; 0 when there are no chunks."""
    return conn.execute("SELECT MAX(id) FROM chunks").fetchone()[0] or 0


def chunk_document_pairs(conn: Connection) -> Iterator[tuple[int, int]]:
    """(chunk id, document id) of every chunk, in no particular order, read lazily. Plain
    tuples, not ChunkDocument: this reads every chunk of the index (100,000 rows at 100,000
    chunks) when a process first counts keyword matches, and a NamedTuple per row nearly
    doubled the time of that loop (100,000 rows: 0.23 s → 0.43 s, load average 9)."""
    return iter(conn.execute("SELECT id, document_id FROM chunks"))


def documents_of_chunks(conn: Connection, chunk_ids: Sequence[int]) -> list[ChunkDocument]:
    """The document of each of these chunks that still exists (a deleted chunk has no row),
    in no particular order."""
    found: list[ChunkDocument] = []
    for start in range(0, len(chunk_ids), _BATCH):
        part = chunk_ids[start : start + _BATCH]
        found += map(
            ChunkDocument._make,
            conn.execute(
                f"SELECT id, document_id FROM chunks WHERE id IN ({','.join('?' * len(part))})",
                part,
            ),
        )
    return found
