"""SQL fragments in SQLite's words, where PostgreSQL's differ (store/postgres/dialect.py)."""

# A read transaction: SQLite's gives every statement in it the same snapshot.
begin_snapshot = "BEGIN"

# A chunk `c`'s document's tags, in order, joined by the unit separator (store/hits.py).
tags_of_chunk = (
    "(SELECT group_concat(tag, char(31)) FROM (SELECT t.tag FROM tags t "
    "WHERE t.document_id = c.document_id ORDER BY t.tag))"
)

# A passage holds kana (store/filters.py): the clause over `c.text` and its pattern.
has_kana = ("c.text GLOB ?", "*[ぁ-ヿ]*")
