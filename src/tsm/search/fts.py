"""Full-text signal: FTS5 BM25 over pre-tokenized columns. `match_expression` is pure and
turns any user text into quoted terms, so FTS5 syntax (`"`, `*`, `AND`, `(`, `-`) is text."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..store import filters, keywords
from ..store.connect import Connection
from .results import Match

if TYPE_CHECKING:
    from .chunkmap import ChunkDocuments

# bm25() column weights for (title, section, body, tags): a word in the title or a tag says
# more about the whole document than one occurrence in a long body.
COLUMN_WEIGHTS = (2.0, 1.5, 1.0, 2.0)


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: Sequence[str]) -> str | None:
    """OR of quoted terms (BM25 ranks documents matching more of them first); None if empty."""
    quoted = [quote_term(t) for t in terms if t.strip()]
    return " OR ".join(quoted) if quoted else None


def fts_hits(
    conn: Connection,
    expression: str,
    where: str,
    params: Sequence[object],
    limit: int,
    chunk_docs: Callable[[], ChunkDocuments] | None = None,
) -> tuple[list[Match], int]:
    """Best chunk per document as (chunk_id, document_id, bm25), best first, and the number of
    matching documents. `where` filters on `c` (chunks) and `d` (documents); `chunk_docs`
    makes the count cheap when there is no filter."""
    matching = None
    if where == filters.EVERYTHING:
        rows, matching = _unfiltered_hits(conn, expression, limit, count=True)
    else:
        rows = keywords.best_chunk_per_document(
            conn, expression, COLUMN_WEIGHTS, where, params, limit
        )
    if len(rows) < limit:
        total = len(rows)
    elif matching is not None and chunk_docs is not None:
        total = chunk_docs().count_documents(matching())
    else:  # counting needs no ranking
        total = keywords.count_matching_documents(conn, expression, where, params)
    return _matches(rows), total


def fts_ranking(
    conn: Connection, expression: str, where: str, params: Sequence[object], limit: int
) -> list[Match]:
    """fts_hits' ranking without its count, for a ranking whose count nobody reads (the
    bridge's): counting every match is a statement of its own."""
    return _matches(_ranked_rows(conn, expression, where, params, limit))


def _matches(rows: list[keywords.KeywordMatch]) -> list[Match]:
    # bm25() is negative (lower is better); expose positive scores.
    return [Match(int(r.chunk_id), int(r.document_id), -float(r.rank)) for r in rows]


def _ranked_rows(
    conn: Connection, expression: str, where: str, params: Sequence[object], limit: int
) -> list[keywords.KeywordMatch]:
    if where == filters.EVERYTHING:
        return _unfiltered_hits(conn, expression, limit, count=False)[0]
    return keywords.best_chunk_per_document(conn, expression, COLUMN_WEIGHTS, where, params, limit)


def _unfiltered_hits(
    conn: Connection, expression: str, limit: int, *, count: bool
) -> tuple[list[keywords.KeywordMatch], Callable[[], Iterable[int]]]:
    """Without filters FTS5 can keep just the best rows by rank (store.keywords.best_chunks);
    a document's chunks may repeat, so fetch more rows until `limit` docs. With `count`,
    also a way to read every matching chunk's id (store.keywords.best_chunks_and_matches)."""
    best: dict[int, keywords.KeywordMatch] = {}
    fetch = limit * 3
    while True:
        if count:
            rows, matching = keywords.best_chunks_and_matches(
                conn, expression, COLUMN_WEIGHTS, fetch
            )
        else:
            rows, matching = keywords.best_chunks(conn, expression, COLUMN_WEIGHTS, fetch), tuple
        best = {}
        for row in rows:
            best.setdefault(row.document_id, row)
        if len(best) >= limit or len(rows) < fetch:
            return list(best.values())[:limit], matching
        fetch *= 4
