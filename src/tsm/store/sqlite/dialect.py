"""SQL fragments in SQLite's words, where PostgreSQL's differ (store/postgres/dialect.py)."""

from __future__ import annotations

from collections.abc import Sequence

# A read transaction: SQLite's gives every statement in it the same snapshot.
begin_snapshot = "BEGIN"

# A chunk `c`'s document's tags, in order, joined by the unit separator (store/hits.py).
tags_of_chunk = (
    "(SELECT group_concat(tag, char(31)) FROM (SELECT t.tag FROM tags t "
    "WHERE t.document_id = c.document_id ORDER BY t.tag))"
)

# A passage holds kana (store/filters.py): the clause over `c.text` and its pattern.
has_kana = ("c.text GLOB ?", "*[ぁ-ヿ]*")


def in_values(column: str, values: Sequence[object], sql_type: str) -> tuple[str, list[object]]:
    """A placeholder per value: SQLite prepares each statement in the process anyway."""
    return f"{column} IN ({','.join('?' * len(values)) or 'NULL'})", list(values)


def tag_sizes(names: Sequence[str]) -> tuple[str, list[object]]:
    """A UNION branch per name, each one range of the tag index (an OR of ranges made SQLite
    scan the whole index)."""
    sizes = " UNION ALL ".join(
        "SELECT CAST(? AS TEXT), tag, COUNT(*) FROM tags WHERE tag >= ? AND tag < ? GROUP BY tag"
        for _ in names
    )
    return sizes, [value for name in names for value in (name, name, name + "0")]
