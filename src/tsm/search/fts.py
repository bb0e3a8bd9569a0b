"""Full-text signal: FTS5 BM25 over pre-tokenized columns. `match_expression` is pure and
turns any user text into quoted terms, so FTS5 syntax (`"`, `*`, `AND`, `(`, `-`) is text."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

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
    conn: sqlite3.Connection,
    expression: str,
    where: str,
    params: Sequence[object],
    limit: int,
    chunk_docs: Callable[[], ChunkDocuments] | None = None,
) -> tuple[list[tuple[int, int, float]], int]:
    """Best chunk per document as (chunk_id, document_id, bm25), best first, and the number of
    matching documents. `where` filters on `c` (chunks) and `d` (documents); `chunk_docs`
    makes the count cheap when there is no filter."""
    weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
    if where.strip() == "1":
        rows = _unfiltered_hits(conn, expression, weights, limit)
    else:
        inner = f"""SELECT f.rowid AS cid, c.document_id AS did,
                           bm25(chunks_fts, {weights}) AS s
                    FROM chunks_fts f JOIN chunks c ON c.id = f.rowid
                    JOIN documents d ON d.id = c.document_id
                    WHERE chunks_fts MATCH ? AND ({where})"""
        # MATERIALIZED: bm25() only works while the FTS query is evaluated, not in a
        # flattened aggregate over it.
        rows = conn.execute(
            f"""WITH m AS MATERIALIZED ({inner})
                SELECT cid, did, MIN(s) AS best FROM m GROUP BY did ORDER BY best, did
                LIMIT ?""",
            (expression, *params, limit),
        ).fetchall()
    if len(rows) < limit:
        total = len(rows)
    elif where.strip() == "1" and chunk_docs is not None:
        total = chunk_docs().count_documents(
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)
            )
        )
    else:  # counting needs no ranking
        total = int(
            conn.execute(
                f"""SELECT COUNT(DISTINCT c.document_id) FROM chunks_fts f
                JOIN chunks c ON c.id = f.rowid JOIN documents d ON d.id = c.document_id
                WHERE chunks_fts MATCH ? AND ({where})""",
                (expression, *params),
            ).fetchone()[0]
        )
    # bm25() is negative (lower is better); expose positive scores.
    return [(int(c), int(d), -float(s)) for c, d, s in rows], total


def _unfiltered_hits(
    conn: sqlite3.Connection, expression: str, weights: str, limit: int
) -> list[tuple[int, int, float]]:
    """Without filters FTS5 can keep just the best rows by rank (a heap, no join or sort of
    every match); a document's chunks may repeat, so fetch more rows until `limit` docs."""
    best: dict[int, tuple[int, int, float]] = {}
    fetch = limit * 3
    while True:
        rows = conn.execute(
            """SELECT f.rowid, c.document_id, f.rank FROM (
                   SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?
                   AND rank MATCH ? ORDER BY rank LIMIT ?) f
               JOIN chunks c ON c.id = f.rowid ORDER BY f.rank, c.document_id""",
            (expression, f"bm25({weights})", fetch),
        ).fetchall()
        best = {}
        for cid, did, score in rows:
            best.setdefault(did, (cid, did, score))
        if len(best) >= limit or len(rows) < fetch:
            return list(best.values())[:limit]
        fetch *= 4
