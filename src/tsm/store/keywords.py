"""The keyword index's statements: FTS5 matches over `chunks_fts` (one row per chunk, rowid =
chunk id), ranked by bm25() with column weights. The ranking that uses them (which weights,
when to filter, how to count) is search/fts.py's; what is here is how SQLite answers it fast.

`expression` is an FTS5 MATCH expression (search.fts.match_expression quotes every term).
`where` and `params` are a filter over `c` (chunks) and `d` (documents) from
store.filters.filter_sql. `weights` are bm25()'s weights for (title, section, body, tags)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from . import pg_keywords
from .connect import Connection, is_postgres


class KeywordMatch(NamedTuple):
    """A chunk that matches, with FTS5's rank: bm25() with the weights, negative, lower is
    better. A NamedTuple, not a dataclass: a search reads hundreds to thousands of them."""

    chunk_id: int
    document_id: int
    rank: float


def insert(conn: Connection, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Add the keyword rows of chunks: (chunk id, title, section, body, tags), each column
    pre-tokenized text (text/tokenizer.py). Call inside the transaction that wrote them."""
    if is_postgres(conn):
        return pg_keywords.insert(conn, rows)
    conn.executemany(
        "INSERT INTO chunks_fts(rowid, title, section, body, tags) VALUES (?, ?, ?, ?, ?)", rows
    )


def delete_document(conn: Connection, doc_id: int) -> None:
    """Remove the keyword rows of a document's chunks (FTS5 has no cascade); call before
    deleting the chunks themselves."""
    if is_postgres(conn):
        return pg_keywords.delete_document(conn, doc_id)
    conn.execute(
        "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE document_id = ?)",
        (doc_id,),
    )


def best_chunk_per_document(
    conn: Connection,
    expression: str,
    weights: Sequence[float],
    where: str,
    params: Sequence[object],
    limit: int,
) -> list[KeywordMatch]:
    """The best matching chunk of each document that passes the filter, best first (ties by
    document id), at most `limit` documents."""
    if is_postgres(conn):
        found = pg_keywords.best_chunk_per_document(conn, expression, weights, where, params, limit)
        return list(map(KeywordMatch._make, found))
    bm25 = _bm25_arguments(weights)
    inner = f"""SELECT f.rowid AS cid, c.document_id AS did,
                       bm25(chunks_fts, {bm25}) AS s
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
    )
    return list(map(KeywordMatch._make, rows))


def best_chunks(
    conn: Connection, expression: str, weights: Sequence[float], limit: int
) -> list[KeywordMatch]:
    """The `limit` best matching chunks, unfiltered, best first (ties by document id); a
    document may have several. FTS5 keeps just the best rows by rank (a heap, no join or sort
    of every match): `rank MATCH` sets the weights, and the join with `chunks` comes after
    the LIMIT."""
    if is_postgres(conn):
        return list(
            map(KeywordMatch._make, pg_keywords.best_chunks(conn, expression, weights, limit))
        )
    rows = conn.execute(
        """SELECT f.rowid, c.document_id, f.rank FROM (
               SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?
               AND rank MATCH ? ORDER BY rank LIMIT ?) f
           JOIN chunks c ON c.id = f.rowid ORDER BY f.rank, c.document_id""",
        (expression, f"bm25({_bm25_arguments(weights)})", limit),
    )
    return list(map(KeywordMatch._make, rows))


def best_chunks_and_matches(
    conn: Connection, expression: str, weights: Sequence[float], limit: int
) -> tuple[list[KeywordMatch], Callable[[], Iterable[int]]]:
    """best_chunks, and a way to read the id of every matching chunk (matching_chunk_ids) for
    a count that follows a full ranking. On PostgreSQL the ids come in the ranking's own
    statement, which has every match in hand: no second round trip, no second pass over the
    phrases. On SQLite FTS5 keeps only the best rows, so the ids are read when asked for."""
    if is_postgres(conn):
        found, ids = pg_keywords.best_chunks_and_matches(conn, expression, weights, limit)
        return list(map(KeywordMatch._make, found)), lambda: ids
    ranked = best_chunks(conn, expression, weights, limit)
    return ranked, lambda: matching_chunk_ids(conn, expression)


def matching_chunk_ids(conn: Connection, expression: str) -> Iterator[int]:
    """The id of every matching chunk, unranked and unfiltered, read lazily: with the
    in-memory chunk → document map (search/chunkmap.py) this counts the documents behind a
    match without joining every match with `chunks`."""
    if is_postgres(conn):
        return pg_keywords.matching_chunk_ids(conn, expression)
    rows = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,))
    return (r[0] for r in rows)


def document_frequency(conn: Connection, expression: str) -> int:
    """The number of chunks that match, whatever their document or filter: a term's
    document frequency over chunks, for the keyword IDF of search/coverage.py."""
    if is_postgres(conn):
        return pg_keywords.document_frequency(conn, expression)
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)
        ).fetchone()[0]
    )


def document_frequencies(conn: Connection, expressions: Sequence[str]) -> list[int]:
    """document_frequency of each expression, in order: on PostgreSQL one round trip for
    all those of one-term phrases (coverage asks one per query term); on SQLite, in process,
    one count each."""
    if is_postgres(conn):
        return pg_keywords.document_frequencies(conn, expressions)
    return [document_frequency(conn, e) for e in expressions]


def matching_among(conn: Connection, expression: str, chunk_ids: Sequence[int]) -> Iterator[int]:
    """The ids of those of `chunk_ids` that match, in no set order, read lazily: which of a
    search's few result chunks hold a query term (search/coverage.py). `rowid IN` lets FTS5
    look the ids up instead of testing every match. One bound variable per id, not batched:
    the callers pass the chunks of one page of results."""
    if is_postgres(conn):
        return pg_keywords.matching_among(conn, expression, chunk_ids)
    marks = ",".join("?" * len(chunk_ids))
    rows = conn.execute(
        f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})",
        (expression, *chunk_ids),
    )
    return (r[0] for r in rows)


def count_matching_documents(
    conn: Connection, expression: str, where: str, params: Sequence[object]
) -> int:
    """The number of documents with a matching chunk that passes the filter (counting needs
    no ranking)."""
    if is_postgres(conn):
        return pg_keywords.count_matching_documents(conn, expression, where, params)
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


class TermMatches(NamedTuple):
    """What term coverage reads (search/coverage.py), in one statement: the number of
    chunks, each expression's document frequency over chunks (None when not asked), and
    which of the given chunks each expression matches."""

    chunks: int | None
    frequencies: list[int] | None
    among: list[set[int]]


def term_matches(
    conn: Connection, expressions: Sequence[str], chunk_ids: Sequence[int], *, frequencies: bool
) -> TermMatches:
    """The chunk count and each expression's document frequency (with `frequencies`), and
    the chunks of `chunk_ids` each expression matches: one statement on SQLite whatever the
    number of terms, so that a search's reads do not grow with its query."""
    if is_postgres(conn):
        return TermMatches(
            *pg_keywords.term_matches(conn, expressions, chunk_ids, frequencies=frequencies)
        )
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
    total: int | None = None
    found: list[int] | None = [0] * len(expressions) if frequencies else None
    among: list[set[int]] = [set() for _ in expressions]
    if not parts:
        return TermMatches(total, found, among)
    for kind, slot, value in conn.execute(" UNION ALL ".join(parts), params):
        if kind == 1:
            among[slot].add(int(value))
        elif slot < 0:
            total = int(value)
        elif found is not None:
            found[slot] = int(value)
    return TermMatches(total, found, among)


def chunk_condition(conn: Connection, expression: str) -> tuple[str, list[object]] | None:
    """An SQL truth value over a chunk `c`: it matches the expression (a page of results
    reads its coverage with its passages, store.hits.hit_rows); None when the engine cannot
    say it in SQL, and the caller asks term_matches instead."""
    if is_postgres(conn):
        return pg_keywords.chunk_condition(expression)
    return (
        "EXISTS (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? AND chunks_fts.rowid = c.id)",
        [expression],
    )
