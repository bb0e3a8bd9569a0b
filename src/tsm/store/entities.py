"""The lookup behind entity matches (search/entities.py), one statement: tags by name with
their sizes, and the documents carrying a tag or named by a title or alias. Names are
normalised as in store/names.py; `where` and `params` are a filter over `c` (chunks) and `d`
(documents) from store.filters.filter_sql, read through the document's first chunk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .connect import Connection
from .engine import store_of


class EntityRow(NamedTuple):
    """A document an entity names, with its first chunk (where an entity match points):
    through `tag` (carried by `size` documents), nested under the query's `name`; or, with
    `tag` None, by a title or alias equal to the whole query."""

    name: str | None
    tag: str | None
    size: int
    document_id: int
    chunk_id: int


def entity_rows(
    conn: Connection,
    names: Sequence[str],
    whole: str,
    max_size: int,
    where: str,
    params: Sequence[object],
) -> list[EntityRow]:
    """Every document carrying a tag named by one of `names` or nested under it (a tag on
    at most `max_size` documents), and every document whose title or alias is `whole`, that
    passes the filter: one statement, in no set order. Each name is one range scan of the
    tag index, [name, name + "0"), which holds name and name/… since "0" sorts right after
    "/" (an OR of ranges made SQLite scan the whole index); the range also holds names such
    as name-x, which the caller drops."""
    sizes, ranges = store_of(conn).dialect.tag_sizes(names)
    tagged = f"""SELECT s.name, s.tag, s.size, t.document_id, c.id FROM sizes s
                 JOIN tags t ON t.tag = s.tag JOIN documents d ON d.id = t.document_id
                 JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                 WHERE s.size <= ? AND {where}"""
    named = f"""SELECT DISTINCT CAST(NULL AS TEXT), CAST(NULL AS TEXT), 0, n.document_id, c.id
                FROM names n JOIN documents d ON d.id = n.document_id
                JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                WHERE n.name = ? AND n.kind IN ('title', 'alias') AND {where}"""
    if names:
        sql = f"WITH sizes(name, tag, size) AS ({sizes}) {tagged} UNION ALL {named}"
        values = [*ranges, max_size, *params, whole, *params]
    else:
        sql, values = named, [whole, *params]
    return [EntityRow._make(row) for row in conn.execute(sql, values)]
