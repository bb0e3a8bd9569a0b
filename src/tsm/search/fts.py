"""Full-text signal: FTS5 BM25 over pre-tokenized columns. `match_expression` is pure and
turns any user text into quoted terms, so FTS5 syntax (`"`, `*`, `AND`, `(`, `-`) is text."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

# bm25() column weights for (title, section, body, tags): a word in the title or a tag says
# more about the whole document than one occurrence in a long body.
COLUMN_WEIGHTS = (2.0, 1.5, 1.0, 2.0)


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: Sequence[str]) -> str | None:
    """OR of quoted terms (BM25 ranks documents matching more of them first); None if empty."""
    quoted = [quote_term(t) for t in terms if t.strip()]
    return " OR ".join(quoted) if quoted else None


def fts_hits(conn: sqlite3.Connection, expression: str, where: str, params: Sequence[object],
             limit: int) -> tuple[list[tuple[int, int, float]], int]:
    """Best chunk per document as (chunk_id, document_id, bm25), best first, and the number of
    matching documents. `where` filters on `c` (chunks) and `d` (documents)."""
    weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
    inner = f"""SELECT f.rowid AS cid, c.document_id AS did, bm25(chunks_fts, {weights}) AS s
                FROM chunks_fts f JOIN chunks c ON c.id = f.rowid
                JOIN documents d ON d.id = c.document_id
                WHERE chunks_fts MATCH ? AND ({where})"""
    # MATERIALIZED: bm25() only works while the FTS query is evaluated, not in a flattened
    # aggregate over it.
    rows = conn.execute(
        f"""WITH m AS MATERIALIZED ({inner})
            SELECT cid, did, MIN(s) AS best FROM m GROUP BY did ORDER BY best, did LIMIT ?""",
        (expression, *params, limit),
    ).fetchall()
    if len(rows) < limit:
        total = len(rows)
    else:
        total = int(conn.execute(f"SELECT COUNT(DISTINCT did) FROM ({inner})",
                                 (expression, *params)).fetchone()[0])
    # bm25() is negative (lower is better); expose positive scores.
    return [(int(c), int(d), -float(s)) for c, d, s in rows], total
