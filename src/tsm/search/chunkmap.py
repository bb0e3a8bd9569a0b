"""chunk id → document id for every chunk, held in memory and patched from the change log
(migration m003) like the vector matrix. Counting the documents behind a keyword match
(`total_matches`) is then a fetch of matching rowids, not a join of every match with
`chunks` (bench/features_cost.py compares the two).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from ..store import chunks, vectors
from ..store.connect import Connection, read_snapshot
from ..store.vectors import Stamp

NO_DOCUMENT = -1


@dataclass(frozen=True)
class ChunkDocuments:
    """An immutable snapshot: `doc_of[chunk_id]` or NO_DOCUMENT."""

    doc_of: array[int]
    stamp: Stamp

    def count_documents(self, chunk_ids: Iterable[int]) -> int:
        doc_of, size = self.doc_of, len(self.doc_of)
        docs = {doc_of[c] for c in chunk_ids if c < size}
        docs.discard(NO_DOCUMENT)
        return len(docs)


_cache: dict[str, ChunkDocuments] = {}
_lock = threading.Lock()


def chunk_documents(conn: Connection, db_key: str) -> ChunkDocuments:
    """The cached map for this DB, brought up to date with the change log."""
    with _lock:
        cached = _cache.get(db_key)
        if cached is not None and vectors.unchanged_since(conn, cached.stamp):
            return cached
        with read_snapshot(conn):  # the log and the chunks it names
            changes = vectors.changes_since(conn, cached.stamp) if cached is not None else None
            if cached is None or changes is None:
                fresh = _loaded(conn)
            else:
                fresh = _patched(conn, cached, *changes)
        _cache[db_key] = fresh
        return fresh


def _loaded(conn: Connection) -> ChunkDocuments:
    stamp = vectors.change_seq(conn)
    top = chunks.max_chunk_id(conn)
    doc_of = array("q", [NO_DOCUMENT]) * (top + 1)
    for chunk_id, doc_id in chunks.chunk_document_pairs(conn):
        doc_of[chunk_id] = doc_id
    return ChunkDocuments(doc_of, stamp)


def _patched(
    conn: Connection, old: ChunkDocuments, changed: list[int], stamp: Stamp
) -> ChunkDocuments:
    doc_of = array("q", old.doc_of)
    if changed and max(changed) >= len(doc_of):
        doc_of.extend([NO_DOCUMENT] * (max(changed) + 1 - len(doc_of)))
    for chunk_id in changed:
        doc_of[chunk_id] = NO_DOCUMENT
    for row in chunks.documents_of_chunks(conn, changed):
        doc_of[row.chunk_id] = row.document_id
    return ChunkDocuments(doc_of, stamp)
