"""Entity matches: documents whose tag, title or alias is named by the query. A note tagged
漱石 should surface for the query 漱石 even when the word is rare in its text."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..store.names import normalise

MAX_ENTITY_DOCS = 20


def entity_documents(
    conn: sqlite3.Connection,
    query_text: str,
    terms: Sequence[str],
    where: str,
    params: Sequence[object],
    limit: int = 20,
) -> list[int]:
    """Documents carrying a tag named by a query term (or nested under it), or whose title
    or alias equals the whole query; most specific first (fewest such documents)."""
    names = {normalise(t) for t in terms if len(t) > 1} | {normalise(query_text)}
    names.discard("")
    if not names:
        return []
    # A name matches a tag or a nested tag under it (#a/b carries a). One range scan of the
    # tag index per name: [name, name + "0") holds name and name/…, since "0" sorts right
    # after "/" (an OR of ranges made SQLite scan the whole index).
    sizes: list[tuple[str, int]] = []
    for name in sorted(names):
        sizes += [
            (tag, size)
            for tag, size in conn.execute(
                "SELECT tag, COUNT(*) FROM tags WHERE tag >= ? AND tag < ? GROUP BY tag",
                (name, name + "0"),
            )
            if tag == name or tag.startswith(name + "/")
        ]
    sizes.sort(key=lambda item: (item[1], item[0]))
    hits: dict[int, int] = {}
    for tag, size in sizes:
        if size > MAX_ENTITY_DOCS:  # a tag on many notes is a topic, not an entity
            continue
        for (doc_id,) in conn.execute(
            f"""SELECT t.document_id FROM tags t JOIN documents d ON d.id = t.document_id
                    JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                    WHERE t.tag = ? AND {where}""",
            (tag, *params),
        ):
            hits.setdefault(doc_id, size)  # a rare tag is a more specific entity
    whole = normalise(query_text)
    for (doc_id,) in conn.execute(
        f"""SELECT DISTINCT n.document_id FROM names n
                JOIN documents d ON d.id = n.document_id
                JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                WHERE n.name = ? AND n.kind IN ('title', 'alias') AND {where}""",
        (whole, *params),
    ):
        hits[doc_id] = 0  # the query names the note itself
    return sorted(hits, key=lambda d: (hits[d], d))[:limit]
