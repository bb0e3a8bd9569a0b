"""Entity matches: documents whose tag, title or alias is named by the query. A note tagged
漱石 should surface for the query 漱石 even when the word is rare in its text."""

from __future__ import annotations

from collections.abc import Sequence

from ..store import entities
from ..store.catalog import TagCount
from ..store.connect import Connection
from ..store.names import normalise

MAX_ENTITY_DOCS = 20


def entity_documents(
    conn: Connection,
    query_text: str,
    terms: Sequence[str],
    where: str,
    params: Sequence[object],
    limit: int = 20,
) -> list[tuple[int, int]]:
    """(document id, rank) of the documents carrying a tag named by a query term (or nested
    under it), or whose title or alias equals the whole query; most specific first (fewest
    such documents). Documents equally specific share a rank: two notes with the same tag
    are equal on this signal, and a rank given by document id would let one outrank the
    other for nothing."""
    names = {normalise(t) for t in terms if len(t) > 1} | {normalise(query_text)}
    names.discard("")
    if not names:
        return []
    # A name matches a tag or a nested tag under it (#a/b carries a): one range scan of the
    # tag index per name (store.entities.tags_under).
    sizes: list[TagCount] = []
    for name in sorted(names):
        sizes += entities.tags_under(conn, name)
    sizes.sort(key=lambda item: (item.count, item.name))
    hits: dict[int, int] = {}
    for tag in sizes:
        if tag.count > MAX_ENTITY_DOCS:  # a tag on many notes is a topic, not an entity
            continue
        for doc_id in entities.documents_tagged(conn, tag.name, where, params):
            hits.setdefault(doc_id, tag.count)  # a rare tag is a more specific entity
    whole = normalise(query_text)
    for doc_id in entities.documents_named(conn, whole, where, params):
        hits[doc_id] = 0  # the query names the note itself
    ordered = sorted(hits, key=lambda d: (hits[d], d))[:limit]
    return list(zip(ordered, shared_ranks([hits[d] for d in ordered]), strict=True))


def shared_ranks(keys: Sequence[int]) -> list[int]:
    """1-based ranks of keys sorted best first, equal keys sharing the better rank
    (competition ranking: 1, 2, 2, 4)."""
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        ranks.append(ranks[-1] if ranks and keys[position - 2] == key else position)
    return ranks
