"""SQL fragments in PostgreSQL's words, where SQLite's differ (store/sqlite/dialect.py)."""

# REPEATABLE READ: the default, READ COMMITTED, gives each statement a snapshot of its own.
begin_snapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ"

# A chunk `c`'s document's tags, in order, joined by the unit separator (store/hits.py).
tags_of_chunk = (
    "(SELECT string_agg(t.tag, chr(31) ORDER BY t.tag) FROM tags t "
    "WHERE t.document_id = c.document_id)"
)

# A passage holds kana (store/filters.py): the clause over `c.text` and its pattern.
has_kana = ("c.text ~ ?", "[ぁ-ヿ]")
