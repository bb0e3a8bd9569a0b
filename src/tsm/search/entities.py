"""Entity matches: documents whose tag, title or alias is named by the query. A note tagged
漱石 should surface for the query 漱石 even when the word is rare in its text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..store import entities
from ..store.connect import Connection
from ..store.names import normalise

MAX_ENTITY_DOCS = 20


@dataclass(frozen=True)
class EntityMatch:
    """A document an entity of the query names, the chunk the match points at (its first),
    and its rank on this signal."""

    chunk_id: int
    document_id: int
    rank: int


def entity_documents(
    conn: Connection,
    query_text: str,
    terms: Sequence[str],
    where: str,
    params: Sequence[object],
    limit: int = 20,
) -> list[EntityMatch]:
    """The documents carrying a tag named by a query term (or nested under it), or whose
    title or alias equals the whole query; most specific first (fewest such documents).
    Documents equally specific share a rank: two notes with the same tag are equal on this
    signal, and a rank given by document id would let one outrank the other for nothing.
    One statement (store.entities.entity_rows)."""
    names = {normalise(t) for t in terms if len(t) > 1} | {normalise(query_text)}
    names.discard("")
    if not names:
        return []
    whole = normalise(query_text)
    hits: dict[int, int] = {}  # document → the size of its most specific entity
    first_chunk: dict[int, int] = {}
    for row in entities.entity_rows(conn, sorted(names), whole, MAX_ENTITY_DOCS, where, params):
        if row.tag is not None:
            assert row.name is not None
            if row.tag != row.name and not row.tag.startswith(row.name + "/"):
                continue  # in the name's range only by spelling (name-x)
        first_chunk[row.document_id] = row.chunk_id
        hits[row.document_id] = min(hits.get(row.document_id, row.size), row.size)
    ordered = sorted(hits, key=lambda d: (hits[d], d))[:limit]
    ranks = shared_ranks([hits[d] for d in ordered])
    return [EntityMatch(first_chunk[d], d, r) for d, r in zip(ordered, ranks, strict=True)]


def shared_ranks(keys: Sequence[int]) -> list[int]:
    """1-based ranks of keys sorted best first, equal keys sharing the better rank
    (competition ranking: 1, 2, 2, 4)."""
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        ranks.append(ranks[-1] if ranks and keys[position - 2] == key else position)
    return ranks
