"""The SQL of a search's filters: a WHERE clause over chunks `c` and documents `d`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Protocol

from . import scope
from .connect import Connection
from .engine import store_of
from .protocol import Dialect
from .sqlite import dialect as sqlite_dialect


class FilterSpec(Protocol):
    """What filter_sql reads (search.query.Filters; store/ sits below search/)."""

    @property
    def after(self) -> dt.date | None: ...
    @property
    def before(self) -> dt.date | None: ...
    @property
    def paths(self) -> Sequence[str]: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def types(self) -> Sequence[str]: ...
    @property
    def categories(self) -> Sequence[str]: ...
    @property
    def lang(self) -> str | None: ...


EVERYTHING = "1 = 1"
"""The WHERE clause of no filter (SQL both engines read)."""


def _ascii_lower(text: str) -> str:
    """What SQL's lower() does on both engines' default builds: ASCII letters only (as
    SQLite's COLLATE NOCASE compared before)."""
    return "".join(c.lower() if c.isascii() else c for c in text)


def filter_sql(filters: FilterSpec, dialect: Dialect = sqlite_dialect) -> tuple[str, list[object]]:
    """A WHERE clause over `c` (chunks) and `d` (documents) and its parameters, in the SQL
    of `dialect` (an engine's: SQLite's by default)."""
    clauses: list[str] = [EVERYTHING]
    params: list[object] = []
    date_expr = "COALESCE(c.chunk_date, d.doc_date)"
    if filters.after:
        clauses.append(f"{date_expr} >= ?")
        params.append(filters.after.isoformat())
    if filters.before:
        clauses.append(f"{date_expr} <= ?")
        params.append(filters.before.isoformat())
    if filters.paths:
        ors = []
        for prefix in filters.paths:
            ors.append("(d.path = ? OR substr(d.path, 1, ?) = ?)")
            params += [prefix, len(prefix) + 1, prefix + "/"]
        clauses.append("(" + " OR ".join(ors) + ")")
    for tag in filters.tags:
        clauses.append(
            "d.id IN (SELECT document_id FROM tags WHERE tag = ? OR substr(tag, 1, ?) = ?)"
        )
        params += [tag, len(tag) + 1, tag + "/"]
    if filters.types:
        clauses.append(f"d.type IN ({','.join('?' * len(filters.types))})")
        params += list(filters.types)
    if filters.categories:
        marks = ",".join("?" * len(filters.categories))  # Daily/ and --category daily agree
        clauses.append(f"lower(d.category) IN ({marks})")
        params += [_ascii_lower(category) for category in filters.categories]
    if filters.lang:
        # A passage is Japanese when it holds kana (hiragana or katakana), which English
        # text never does and Japanese prose always does; a pattern per engine.
        has_kana, pattern = dialect.has_kana
        clauses.append(has_kana if filters.lang == "ja" else f"NOT ({has_kana})")
        params.append(pattern)
    return " AND ".join(clauses), params


def search_sql(conn: Connection, filters: FilterSpec) -> tuple[str, list[object]]:
    """filter_sql, and in a team store that holds transcripts this member may not see, the
    clause that leaves them out (store/scope.py): a search ranks, counts and shows only what
    its reader may see. Without such a transcript it stays EVERYTHING when filter_sql is, so
    an unfiltered search keeps its fast path."""
    where, params = filter_sql(filters, store_of(conn).dialect)
    if not scope.hides_any(conn):
        return where, params
    visible, visible_params = scope.visible(conn)
    return f"{where} AND {visible}", [*params, *visible_params]


def count_documents(conn: Connection, where: str, params: Sequence[object]) -> int:
    """Documents with at least one chunk a filter clause (search_sql) lets through."""
    return int(
        conn.execute(
            "SELECT COUNT(DISTINCT d.id) FROM documents d JOIN chunks c ON c.document_id = d.id "
            f"WHERE {where}",
            params,
        ).fetchone()[0]
    )


def chunk_ids(conn: Connection, where: str, params: Sequence[object]) -> Iterator[int]:
    """The chunks a filter clause (filter_sql) lets through: the vector side's allow-list."""
    for (chunk_id,) in conn.execute(
        f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}",
        params,
    ):
        yield chunk_id


def most_recent(
    conn: Connection, where: str, params: Sequence[object], limit: int
) -> list[tuple[int, int]]:
    """(document id, its first chunk id) of the most recently dated documents a filter clause
    lets through, newest first: a query made only of a time expression."""
    rows = conn.execute(
        f"""SELECT d.id, MIN(c.id) FROM documents d JOIN chunks c ON c.document_id = d.id
            WHERE {where} GROUP BY d.id
            ORDER BY MAX(COALESCE(c.chunk_date, d.doc_date)) DESC, d.id DESC LIMIT ?""",
        (*params, limit),
    )
    return [(int(doc_id), int(chunk_id)) for doc_id, chunk_id in rows]
