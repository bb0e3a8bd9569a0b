"""The keyword index, as the search asks it: which chunks match an FTS5 expression and how
well (FTS5's bm25() with column weights), counted, filtered or ranked. The ranking that uses
them (which weights, when to filter, how to count) is search/fts.py's; how each engine
answers fast is its own (store/sqlite/keywords.py: FTS5; store/postgres/keywords.py: FTS5's
ranking over postings tables).

`expression` is an FTS5 MATCH expression (search.fts.match_expression quotes every term).
`where` and `params` are a filter over `c` (chunks) and `d` (documents) from
store.filters.filter_sql. `weights` are bm25()'s weights for (title, section, body, tags)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from .connect import Connection
from .engine import store_of
from .protocol import KeywordRow


class KeywordMatch(NamedTuple):
    """A chunk that matches, with FTS5's rank: bm25() with the weights, negative, lower is
    better. A NamedTuple, not a dataclass: a search reads hundreds to thousands of them."""

    chunk_id: int
    document_id: int
    rank: float


def insert(conn: Connection, rows: Sequence[KeywordRow]) -> None:
    """Add the keyword rows of chunks: (chunk id, title, section, body, tags), each column
    pre-tokenized text (text/tokenizer.py). Call inside the transaction that wrote them."""
    store_of(conn).keywords.insert(conn, rows)


def delete_document(conn: Connection, doc_id: int) -> None:
    """Remove the keyword rows of a document's chunks (FTS5 has no cascade); call before
    deleting the chunks themselves."""
    store_of(conn).keywords.delete_document(conn, doc_id)


def settle(conn: Connection) -> None:
    """Ready the index for reads after a run of writes (outside any transaction): on
    PostgreSQL the new postings' pages are marked visible to all, so that the ranking reads
    them from the index alone; on SQLite FTS5's segments are merged into one once they
    have piled up, so that a term is looked up once instead of in each of them."""
    store_of(conn).keywords.settle(conn)


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
    found = store_of(conn).keywords.best_chunk_per_document(
        conn, expression, weights, where, params, limit
    )
    return list(map(KeywordMatch._make, found))


def best_chunks(
    conn: Connection, expression: str, weights: Sequence[float], limit: int
) -> list[KeywordMatch]:
    """The `limit` best matching chunks, unfiltered, best first (ties by document id); a
    document may have several."""
    found = store_of(conn).keywords.best_chunks(conn, expression, weights, limit)
    return list(map(KeywordMatch._make, found))


def best_chunks_and_matches(
    conn: Connection, expression: str, weights: Sequence[float], limit: int
) -> tuple[list[KeywordMatch], Callable[[], Iterable[int]]]:
    """best_chunks, and a way to read the id of every matching chunk (matching_chunk_ids) for
    a count that follows a full ranking. On PostgreSQL the ids come in the ranking's own
    statement, which has every match in hand: no second round trip, no second pass over the
    phrases. On SQLite FTS5 keeps only the best rows, so the ids are read when asked for."""
    found, matching = store_of(conn).keywords.best_chunks_and_matches(
        conn, expression, weights, limit
    )
    return list(map(KeywordMatch._make, found)), matching


def matching_chunk_ids(conn: Connection, expression: str) -> Iterator[int]:
    """The id of every matching chunk, unranked and unfiltered, read lazily: with the
    in-memory chunk → document map (search/chunkmap.py) this counts the documents behind a
    match without joining every match with `chunks`."""
    return store_of(conn).keywords.matching_chunk_ids(conn, expression)


def document_frequency(conn: Connection, expression: str) -> int:
    """The number of chunks that match, whatever their document or filter: a term's
    document frequency over chunks, for the keyword IDF of search/coverage.py."""
    return store_of(conn).keywords.document_frequency(conn, expression)


def document_frequencies(conn: Connection, expressions: Sequence[str]) -> list[int]:
    """document_frequency of each expression, in order: on PostgreSQL one round trip for
    all those of one-term phrases (coverage asks one per query term)."""
    return store_of(conn).keywords.document_frequencies(conn, expressions)


def matching_among(conn: Connection, expression: str, chunk_ids: Sequence[int]) -> Iterator[int]:
    """The ids of those of `chunk_ids` that match, in no set order, read lazily: which of a
    search's few result chunks hold a query term (search/coverage.py)."""
    return store_of(conn).keywords.matching_among(conn, expression, chunk_ids)


def count_matching_documents(
    conn: Connection, expression: str, where: str, params: Sequence[object]
) -> int:
    """The number of documents with a matching chunk that passes the filter (counting needs
    no ranking)."""
    return store_of(conn).keywords.count_matching_documents(conn, expression, where, params)


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
    the chunks of `chunk_ids` each expression matches, in a number of statements that does
    not grow with the query."""
    total: int | None = None
    found: list[int] | None = [0] * len(expressions) if frequencies else None
    among: list[set[int]] = [set() for _ in expressions]
    rows = store_of(conn).keywords.term_match_rows(
        conn, expressions, chunk_ids, frequencies=frequencies
    )
    for kind, slot, value in rows:
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
    return store_of(conn).keywords.chunk_condition(expression)
