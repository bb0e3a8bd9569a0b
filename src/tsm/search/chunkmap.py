"""chunk id → document id for every chunk, held in memory and patched from the change log
(migration m003) like the vector matrix. Counting the documents behind a keyword match
(`total_matches`) is then a fetch of matching rowids, not a join of every match with
`chunks` (bench/features_cost.py compares the two).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Iterable
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


def chunk_documents(
    conn: Connection, db_key: str, unchanged: Callable[[Stamp], bool] | None = None
) -> ChunkDocuments:
    """The cached map for this DB, brought up to date with the change log; `unchanged`
    answers whether the log moved since a stamp (a search's LogCheck), else the store does."""
    with _lock:
        cached = _cache.get(db_key)
        check = unchanged or (lambda stamp: vectors.unchanged_since(conn, stamp))
        if cached is not None and check(cached.stamp):
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


class LogCheck:
    """The change log asked once per stamp for one search: its chunk map and its vector index
    hold the same stamp, and asking again a few milliseconds later costs a round trip to a
    server to learn what the first answer said. A change committed in between is seen by
    the next search, as one committed just after this search is."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._answers: dict[Stamp, bool] = {}

    def __call__(self, stamp: Stamp) -> bool:
        if stamp not in self._answers:
            self._answers[stamp] = vectors.unchanged_since(self.conn, stamp)
        return self._answers[stamp]
