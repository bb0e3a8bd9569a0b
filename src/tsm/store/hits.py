"""What a search reads to turn its ranked documents into results (search/hydrate.py): the
rows of the candidate documents for the score multipliers and the freshness check, then, for
the page chosen, its passages, chunk counts, tags and whole texts in one statement. Every
read is by id, so a page of results costs the same whatever the vault's size. Rows are
NamedTuples: the multipliers read one per candidate, hundreds per search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from . import scope
from .connect import Connection
from .engine import store_of

# Document ids per statement, a bound variable each (SQLite before 3.32 allowed 999).
_BATCH = 500


class ResultDocument(NamedTuple):
    """A candidate document: what the multipliers (path, type, category, status, date), the
    freshness check (size, mtime), a hit's source (title, created, updated) and its related
    documents (aliases) need. The fields are the columns read, in the statement's order."""

    id: int
    path: str
    title: str
    type: str
    category: str
    status: str | None
    created: str | None
    updated: str | None
    doc_date: str | None
    size: int
    mtime: float
    aliases: str  # a JSON list
    # Written from this index root: its file is at `path` here (in a team store, another
    # root's note is not, and is never compared with the file of that name here).
    local: bool = True


class ResultChunk(NamedTuple):
    """The passage a hit shows."""

    id: int
    chunk_index: int
    section: str
    page: int | None
    text: str


_DOCUMENT_COLUMNS = ", ".join(f for f in ResultDocument._fields if f != "local")


def documents_by_id(conn: Connection, ids: Sequence[int]) -> dict[int, ResultDocument]:
    """The row of each of these documents that still exists and its reader may see, by id (a
    document deleted since it was found has none; nor has another member's transcript in a
    team store, whatever ranking found it: store/scope.py)."""
    docs: dict[int, ResultDocument] = {}
    visible, visible_params = scope.visible(conn, "documents")
    local, local_params = scope.written_here(conn)
    for start in range(0, len(ids), _BATCH):
        among, among_params = store_of(conn).dialect.in_values(
            "id", ids[start : start + _BATCH], "bigint"
        )
        for row in conn.execute(
            f"SELECT {_DOCUMENT_COLUMNS}, {local} FROM documents WHERE {among} AND {visible}",
            (*local_params, *among_params, *visible_params),
        ):
            docs[row[0]] = ResultDocument._make(row)
    return docs


def chunks_by_id(conn: Connection, ids: Sequence[int]) -> dict[int, ResultChunk]:
    """The passage of each of these chunks, by id; one statement (a page of results)."""
    among, params = store_of(conn).dialect.in_values("id", ids, "bigint")
    return {
        row[0]: ResultChunk._make(row)
        for row in conn.execute(
            f"SELECT id, chunk_index, section, page, text FROM chunks WHERE {among}", params
        )
    }


class HitRow(NamedTuple):
    """Everything a chosen hit shows besides its score: its passage, its document's chunk
    count and tags, and the document's whole text when asked for."""

    id: int
    document_id: int
    chunk_index: int
    section: str
    page: int | None
    line: int | None  # the line of the file the passage starts on (migration m008)
    text: str
    total_chunks: int
    tags: tuple[str, ...]
    content: str | None
    matches: tuple[bool, ...] = ()  # whether it matches each of the expressions asked


def hit_rows(
    conn: Connection,
    chunk_ids: Sequence[int],
    content_of: Sequence[int] = (),
    conditions: Sequence[tuple[str, Sequence[object]]] = (),
) -> dict[int, HitRow]:
    """The rows of a page of results, by chunk id: one statement, whatever the page's
    size; `content_of` names the documents whose whole text is wanted, and `conditions`
    (store.keywords.chunk_condition) the keyword expressions to test each chunk against."""
    if not chunk_ids:
        return {}
    tests = "".join(f", {sql}" for sql, _ in conditions)
    test_params = [p for _, params in conditions for p in params]
    dialect = store_of(conn).dialect
    tags = dialect.tags_of_chunk
    wanted, wanted_params = dialect.in_values("c.document_id", content_of, "bigint")
    among, among_params = dialect.in_values("c.id", chunk_ids, "bigint")
    rows = conn.execute(
        f"""SELECT c.id, c.document_id, c.chunk_index, c.section, c.page, c.line, c.text,
                   (SELECT COUNT(*) FROM chunks n WHERE n.document_id = c.document_id), {tags},
                   CASE WHEN {wanted} THEN d.text END{tests}
            FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {among}""",
        (*wanted_params, *test_params, *among_params),
    )
    return {
        row[0]: HitRow._make(
            (
                *row[:8],
                tuple(row[8].split("\x1f")) if row[8] else (),
                row[9],
                tuple(bool(m) for m in row[10:]),
            )
        )
        for row in rows
    }
