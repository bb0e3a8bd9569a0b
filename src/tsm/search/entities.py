"""Entity matches: documents whose tag, title or alias is named by the query. A note tagged
漱石 should surface for the query 漱石 even when the word is rare in its text."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from collections.abc import Sequence


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def entity_documents(conn: sqlite3.Connection, query_text: str, terms: Sequence[str],
                     where: str, params: Sequence[object], limit: int = 20) -> list[int]:
    """Documents carrying a tag named by a query term (or nested under it), or whose title
    or alias equals the whole query; most specific first (fewest such documents)."""
    names = {_norm(t) for t in terms if len(t) > 1} | {_norm(query_text)}
    names.discard("")
    if not names:
        return []
    # A name matches a tag or a nested tag under it (#a/b carries a); both use the tag index.
    ordered = sorted(names)
    clauses = " OR ".join(["tag IN (" + ",".join("?" * len(ordered)) + ")"] +
                          ["(tag > ? AND tag < ?)"] * len(ordered))
    bounds = [b for n in ordered for b in (n + "/", n + "0")]  # '0' sorts right after '/'
    tags = [tag for (tag,) in conn.execute(
        f"SELECT DISTINCT tag FROM tags WHERE {clauses}", (*ordered, *bounds))]
    hits: dict[int, int] = {}
    if tags:
        marks = ",".join("?" * len(tags))
        rows = conn.execute(
            f"""SELECT t.document_id, t.tag FROM tags t
                JOIN documents d ON d.id = t.document_id
                JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                WHERE t.tag IN ({marks}) AND {where}""", (*tags, *params)).fetchall()
        sizes: dict[str, int] = {}
        for _, tag in rows:
            sizes[tag] = sizes.get(tag, 0) + 1
        for doc_id, tag in rows:  # a rare tag is a more specific entity
            hits[doc_id] = min(hits.get(doc_id, 10**9), sizes[tag])
    whole = _norm(query_text)
    for doc_id, title, aliases in conn.execute(
            f"""SELECT d.id, d.title, d.aliases FROM documents d
                JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                WHERE {where} AND (lower(d.title) = ? OR d.aliases LIKE ?)""",
            (*params, whole, f"%{whole}%")):
        if _norm(title) == whole or whole in {_norm(a) for a in json.loads(aliases or "[]")}:
            hits[doc_id] = 0
    return sorted(hits, key=lambda d: (hits[d], d))[:limit]
