"""The lookups behind entity matches (search/entities.py): tags by name with their sizes, and
the documents carrying a tag or named by a title or alias. Names are normalised as in
store/names.py; `where` and `params` are a filter over `c` (chunks) and `d` (documents) from
store.filters.filter_sql, which these statements read through the document's first chunk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .catalog import TagCount
from .connect import Connection


def tags_under(conn: Connection, name: str) -> list[TagCount]:
    """The tag `name` and the tags nested under it (`name/…`, since #a/b carries a), each with
    the number of documents carrying it, by tag."""
    # One range scan of the tag index: [name, name + "0") holds name and name/…, since "0"
    # sorts right after "/" (an OR of ranges made SQLite scan the whole index). The range
    # also holds names such as name-x, which the test after it drops.
    return [
        TagCount(tag, size)
        for tag, size in conn.execute(
            "SELECT tag, COUNT(*) FROM tags WHERE tag >= ? AND tag < ? GROUP BY tag",
            (name, name + "0"),
        )
        if tag == name or tag.startswith(name + "/")
    ]


def documents_tagged(conn: Connection, tag: str, where: str, params: Sequence[object]) -> list[int]:
    """Ids of the documents carrying exactly `tag` that pass the filter, in no set order."""
    return [
        doc_id
        for (doc_id,) in conn.execute(
            f"""SELECT t.document_id FROM tags t JOIN documents d ON d.id = t.document_id
                    JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                    WHERE t.tag = ? AND {where}""",
            (tag, *params),
        )
    ]


def documents_named(conn: Connection, name: str, where: str, params: Sequence[object]) -> list[int]:
    """Ids of the documents whose title or an alias is `name` (normalised) that pass the
    filter, each once, in no set order."""
    return [
        doc_id
        for (doc_id,) in conn.execute(
            f"""SELECT DISTINCT n.document_id FROM names n
                    JOIN documents d ON d.id = n.document_id
                    JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                    WHERE n.name = ? AND n.kind IN ('title', 'alias') AND {where}""",
            (name, *params),
        )
    ]


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
    sizes = " UNION ALL ".join(
        "SELECT CAST(? AS TEXT), tag, COUNT(*) FROM tags WHERE tag >= ? AND tag < ? GROUP BY tag"
        for _ in names
    )
    tagged = f"""SELECT s.name, s.tag, s.size, t.document_id, c.id FROM sizes s
                 JOIN tags t ON t.tag = s.tag JOIN documents d ON d.id = t.document_id
                 JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                 WHERE s.size <= ? AND {where}"""
    named = f"""SELECT DISTINCT CAST(NULL AS TEXT), CAST(NULL AS TEXT), 0, n.document_id, c.id
                FROM names n JOIN documents d ON d.id = n.document_id
                JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0
                WHERE n.name = ? AND n.kind IN ('title', 'alias') AND {where}"""
    ranges = [value for name in names for value in (name, name, name + "0")]
    if names:
        sql = f"WITH sizes(name, tag, size) AS ({sizes}) {tagged} UNION ALL {named}"
        values = [*ranges, max_size, *params, whole, *params]
    else:
        sql, values = named, [whole, *params]
    return [EntityRow._make(row) for row in conn.execute(sql, values)]
