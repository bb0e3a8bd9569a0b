"""SQL fragments in PostgreSQL's words, where SQLite's differ (store/sqlite/dialect.py)."""

from __future__ import annotations

from collections.abc import Sequence

# REPEATABLE READ: the default, READ COMMITTED, gives each statement a snapshot of its own.
begin_snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ"

# A chunk `c`'s document's tags, in order, joined by the unit separator (store/hits.py).
tags_of_chunk = (
    "(SELECT string_agg(t.tag, chr(31) ORDER BY t.tag) FROM tags t "
    "WHERE t.document_id = c.document_id)"
)

# A passage holds kana (store/filters.py): the clause over `c.text` and its pattern.
has_kana = ("c.text ~ ?", "[ぁ-ヿ]")


def in_values(column: str, values: Sequence[object], sql_type: str) -> tuple[str, list[object]]:
    """The values as one array parameter of `sql_type`, so the statement's text is the same
    whatever their number: psycopg parses it once and the server plans it once, where a
    placeholder per value made each page of results a statement never seen before."""
    return f"{column} = ANY(?::{sql_type}[])", [list(values)]


def tag_sizes(names: Sequence[str]) -> tuple[str, list[object]]:
    """One range per name through LATERAL over the names as an array, so the statement's
    text is the same for any number of names (planned once)."""
    return (
        """SELECT q.name, s.tag, s.size FROM unnest(?::text[], ?::text[]) AS q(name, upto)
           CROSS JOIN LATERAL (SELECT t.tag, COUNT(*) AS size FROM tags t
                               WHERE t.tag >= q.name AND t.tag < q.upto GROUP BY t.tag) s""",
        [list(names), [name + "0" for name in names]],
    )
