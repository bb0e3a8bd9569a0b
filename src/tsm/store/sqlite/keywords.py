"""The keyword index in SQLite: FTS5 matches over `chunks_fts` (one row per chunk, rowid =
chunk id), ranked by bm25() with column weights. store/keywords.py documents each operation;
what is here is how SQLite answers it fast."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..connect import Connection
    from ..protocol import KeywordRow, RankedChunk, TermMatchRow


def insert(conn: Connection, rows: Sequence[KeywordRow]) -> None:
    conn.executemany(
        "INSERT INTO chunks_fts(rowid, title, section, body, tags) VALUES (?, ?, ?, ?, ?)", rows
    )


def delete_document(conn: Connection, doc_id: int) -> None:
    conn.execute(
        "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE document_id = ?)",
        (doc_id,),
    )


# A run of writes leaves FTS5's index in segments, one per commit, which FTS5 merges only
# now and then, and a search looks a term up in every segment (a page's term coverage once
# per chunk): merged into one, those look-ups cost a fraction (bench/results/
# sqlite-search-speed.md). A merge rewrites the whole index, so it waits until the segments
# besides the largest hold MERGE_SHARE of the pages: a large run always merges, a few
# edited files add small segments that wait for more.
MERGE_SHARE = 0.1


def settle(conn: Connection) -> None:
    """Merge the keyword index into one segment once the segments besides the largest hold
    MERGE_SHARE of its pages (outside any transaction: the merge commits on its own)."""
    pages = sorted(n for (n,) in conn.execute("SELECT COUNT(*) FROM chunks_fts_idx GROUP BY segid"))
    if len(pages) > 1 and sum(pages[:-1]) >= MERGE_SHARE * sum(pages):
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")


def best_chunk_per_document(
    conn: Connection,
    expression: str,
    weights: Sequence[float],
    where: str,
    params: Sequence[object],
    limit: int,
) -> Iterable[RankedChunk]:
    bm25 = _bm25_arguments(weights)
    inner = f"""SELECT f.rowid AS cid, c.document_id AS did,
                       bm25(chunks_fts, {bm25}) AS s
                FROM chunks_fts f JOIN chunks c ON c.id = f.rowid
                JOIN documents d ON d.id = c.document_id
                WHERE chunks_fts MATCH ? AND ({where})"""
    # MATERIALIZED: bm25() only works while the FTS query is evaluated, not in a
    # flattened aggregate over it.
    return conn.execute(
        f"""WITH m AS MATERIALIZED ({inner})
            SELECT cid, did, MIN(s) AS best FROM m GROUP BY did ORDER BY best, did
            LIMIT ?""",
        (expression, *params, limit),
    )


def best_chunks(
    conn: Connection, expression: str, weights: Sequence[float], limit: int
) -> Iterable[RankedChunk]:
    """FTS5 keeps just the best rows by rank (a heap, no join or sort of every match):
    `rank MATCH` sets the weights, and the join with `chunks` comes after the LIMIT."""
    return conn.execute(
        """SELECT f.rowid, c.document_id, f.rank FROM (
               SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?
               AND rank MATCH ? ORDER BY rank LIMIT ?) f
           JOIN chunks c ON c.id = f.rowid ORDER BY f.rank, c.document_id""",
        (expression, f"bm25({_bm25_arguments(weights)})", limit),
    )


def best_chunks_and_matches(
    conn: Connection, expression: str, weights: Sequence[float], limit: int
) -> tuple[Iterable[RankedChunk], Callable[[], Iterable[int]]]:
    """FTS5 keeps only the best rows, so the ids of every match are read when asked for."""
    return best_chunks(conn, expression, weights, limit), lambda: matching_chunk_ids(
        conn, expression
    )


def matching_chunk_ids(conn: Connection, expression: str) -> Iterator[int]:
    rows = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,))
    return (r[0] for r in rows)


def document_frequency(conn: Connection, expression: str) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)
        ).fetchone()[0]
    )


def document_frequencies(conn: Connection, expressions: Sequence[str]) -> list[int]:
    """In process, one count each: SQLite has no round trips to save."""
    return [document_frequency(conn, e) for e in expressions]


def matching_among(conn: Connection, expression: str, chunk_ids: Sequence[int]) -> Iterator[int]:
    """`rowid IN` lets FTS5 look the ids up instead of testing every match. One bound
    variable per id, not batched: the callers pass the chunks of one page of results."""
    marks = ",".join("?" * len(chunk_ids))
    rows = conn.execute(
        f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})",
        (expression, *chunk_ids),
    )
    return (r[0] for r in rows)


def count_matching_documents(
    conn: Connection, expression: str, where: str, params: Sequence[object]
) -> int:
    return int(
        conn.execute(
            f"""SELECT COUNT(DISTINCT c.document_id) FROM chunks_fts f
            JOIN chunks c ON c.id = f.rowid JOIN documents d ON d.id = c.document_id
            WHERE chunks_fts MATCH ? AND ({where})""",
            (expression, *params),
        ).fetchone()[0]
    )


def _bm25_arguments(weights: Sequence[float]) -> str:
    """The weights as written after `bm25(chunks_fts, ` (e.g. `2.0, 1.5, 1.0, 2.0`)."""
    return ", ".join(str(w) for w in weights)


def term_match_rows(
    conn: Connection, expressions: Sequence[str], chunk_ids: Sequence[int], *, frequencies: bool
) -> Iterable[TermMatchRow]:
    """One statement whatever the number of terms, so that a search's reads do not grow
    with its query."""
    parts: list[str] = []
    params: list[object] = []
    if frequencies:
        parts.append("SELECT 0, -1, COUNT(*) FROM chunks")
        for n, expression in enumerate(expressions):
            parts.append(f"SELECT 0, {n}, COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?")
            params.append(expression)
    if chunk_ids:  # `rowid IN` lets FTS5 look the ids up instead of testing every match
        ids = json.dumps(list(chunk_ids))
        for n, expression in enumerate(expressions):
            parts.append(
                f"SELECT 1, {n}, rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
                "AND rowid IN (SELECT value FROM json_each(?))"
            )
            params += [expression, ids]
    if not parts:
        return ()
    return conn.execute(" UNION ALL ".join(parts), params)


def chunk_condition(expression: str) -> tuple[str, list[object]] | None:
    return (
        "EXISTS (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? AND chunks_fts.rowid = c.id)",
        [expression],
    )
