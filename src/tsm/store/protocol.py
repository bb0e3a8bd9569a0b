"""The Store protocol: what each engine must implement where SQLite's and PostgreSQL's SQL
differ, grouped by what the store's callers need. An engine (store/sqlite/,
store/postgres/) gives one module per group, under the same name in both packages, and
names them in its `STORE`; engine.store_of finds a connection's. What both engines share
(the dialect-neutral SQL, the named rows) stays in the store modules that callers import,
which ask the engine only for the rest: no store module tests which engine it holds."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from ..config import Settings
    from .connect import Connection

IN_LIST_IDS = 500  # ids per `IN (...)` list, a bound variable each

KeywordRow = tuple[int, str, str, str, str]
"""A chunk's keyword row: (chunk id, title, section, body, tags), each pre-tokenized text."""

RankedChunk = tuple[int, int, float]
"""(chunk id, document id, rank): FTS5's bm25() rank, negative, lower is better
(store.keywords names it KeywordMatch)."""


TermMatchRow = tuple[int, int, int]
"""A row of one statement that store.keywords.term_matches reads: (0, -1, chunks in the
index), (0, n, chunks expression n matches), or (1, n, a chunk among those asked that
expression n matches); n indexes the expressions."""


class KeywordIndex(Protocol):
    """The keyword index: its rows and FTS5's matches and ranking over them (store/keywords.py
    documents each operation). `expression` is an FTS5 MATCH expression
    (search.fts.match_expression); `where` and `params` a filter over `c` (chunks) and `d`
    (documents) from store.filters; `weights` bm25()'s for (title, section, body, tags)."""

    def insert(self, conn: Connection, rows: Sequence[KeywordRow]) -> None: ...

    def delete_document(self, conn: Connection, doc_id: int) -> None: ...

    def settle(self, conn: Connection) -> None: ...

    def best_chunk_per_document(
        self,
        conn: Connection,
        expression: str,
        weights: Sequence[float],
        where: str,
        params: Sequence[object],
        limit: int,
    ) -> Iterable[RankedChunk]: ...

    def best_chunks(
        self, conn: Connection, expression: str, weights: Sequence[float], limit: int
    ) -> Iterable[RankedChunk]: ...

    def best_chunks_and_matches(
        self, conn: Connection, expression: str, weights: Sequence[float], limit: int
    ) -> tuple[Iterable[RankedChunk], Callable[[], Iterable[int]]]: ...

    def matching_chunk_ids(self, conn: Connection, expression: str) -> Iterator[int]: ...

    def document_frequency(self, conn: Connection, expression: str) -> int: ...

    def document_frequencies(self, conn: Connection, expressions: Sequence[str]) -> list[int]: ...

    def matching_among(
        self, conn: Connection, expression: str, chunk_ids: Sequence[int]
    ) -> Iterator[int]: ...

    def count_matching_documents(
        self, conn: Connection, expression: str, where: str, params: Sequence[object]
    ) -> int: ...

    def term_match_rows(
        self,
        conn: Connection,
        expressions: Sequence[str],
        chunk_ids: Sequence[int],
        *,
        frequencies: bool,
    ) -> Iterable[TermMatchRow]: ...

    def chunk_condition(self, expression: str) -> tuple[str, list[object]] | None: ...


VectorRow = tuple[str, str, int, object]
"""A row of `embeddings` to insert: (model, hash of the text, dimension, the vector in the
engine's own type: float32 bytes on SQLite, pgvector's `vector` on PostgreSQL)."""


class VectorRows(Protocol):
    """How an engine stores vectors and reads them back as a matrix (store/vectors.py)."""

    def storable_rows(
        self, conn: Connection, model: str, items: Iterable[tuple[str, np.ndarray]]
    ) -> list[VectorRow]: ...

    def after_delete(self, conn: Connection) -> None: ...

    def drop_released(self, conn: Connection) -> int:
        """Delete the vectors of the released hashes that no chunk uses, and empty
        `released_hashes`; how many were deleted (vectors.drop_orphans)."""
        ...

    def exported_column(self, conn: Connection) -> str: ...

    def load_rows(
        self, conn: Connection, model: str, chunk_ids: Sequence[int] | None, dim: int | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


class NearestIndex(Protocol):
    """An index of the engine's own that answers nearest-vector queries (pgvector's HNSW per
    (model, dimension)), which a searcher asks instead of holding the matrix in memory
    (search/vector.py's AnnIndex). An engine without one leaves Store.nearest None."""

    def has_hnsw(self, conn: Connection, model: str, dim: int) -> bool: ...

    def model_vectors(self, conn: Connection, model: str, dim: int) -> int: ...

    def summary(
        self, conn: Connection, model: str, dim: int
    ) -> tuple[int, int, np.ndarray | None]: ...

    def nearest(
        self,
        conn: Connection,
        model: str,
        query: np.ndarray,
        limit: int,
        ef_search: int,
        allowed: Sequence[int] | None = None,
    ) -> list[RankedChunk]: ...

    def mean_vector(
        self, conn: Connection, model: str, dim: int, chunk_ids: Sequence[int] | None = None
    ) -> np.ndarray | None: ...

    def document_best(
        self,
        conn: Connection,
        model: str,
        query: np.ndarray,
        doc_id: int,
        allowed: Sequence[int] | None,
    ) -> float | None: ...

    def lacking(
        self, conn: Connection, model: str, dim: int, chunk_ids: Sequence[int]
    ) -> set[int]: ...


Stamp = Hashable
"""How far a reader has read the vector change log: an engine's own value; equal stamps
mean nothing changed."""


class ChangeLog(Protocol):
    """The vector change log (migration m003) that lets a searcher refresh its matrix
    instead of loading it again (store/vectors.py documents each operation)."""

    def change_seq(self, conn: Connection) -> Stamp: ...

    def unchanged_since(self, conn: Connection, stamp: Stamp) -> bool: ...

    def changes_since(self, conn: Connection, seq: Stamp) -> tuple[list[int], Stamp] | None: ...

    def prune_changes(self, conn: Connection, keep: int) -> int: ...


ChunkValues = tuple[int, int, str, int | None, int | None, str | None, str, str]
"""A chunk row to insert: (document id, chunk index, section, page, line, date, text, hash
of the text to embed)."""


@dataclass(frozen=True)
class DocumentContents:
    """What a document's row brings along, written with it: its chunks (the chunk values
    without the document's id), their keyword rows ((title, section, body, tags) texts, in
    the chunks' order, without chunk ids), its tags, links ((target, type, key)) and names
    ((name, kind))."""

    chunks: Sequence[tuple[int, str, int | None, int | None, str | None, str, str]]
    keywords: Sequence[tuple[str, str, str, str]]
    tags: Sequence[str]
    links: Sequence[tuple[str, str, str]]
    names: Sequence[tuple[str, str]]


class DocumentWrites(Protocol):
    """What a document's writer needs of the engine beyond the shared SQL
    (store/documents.py): the locks that keep concurrent writers of one store apart, and the
    statements whose best form differs."""

    def lock_paths(self, conn: Connection, paths: Sequence[str]) -> None: ...

    def exclude_writers(self, conn: Connection) -> None: ...

    def lock_twin(self, conn: Connection, path: str) -> bool: ...

    def remove_path(self, conn: Connection, path: str) -> None: ...

    def insert_chunks(self, conn: Connection, values: Sequence[ChunkValues]) -> list[int]: ...

    def insert_document(
        self,
        conn: Connection,
        columns: Sequence[str],
        values: Sequence[object],
        contents: DocumentContents,
    ) -> Callable[[], int]:
        """Insert a document's row (`columns` of `documents` and their values) and its
        contents; a function that gives the new document's id (reading it may wait for the
        server)."""
        ...


class Dialect(Protocol):
    """SQL fragments that the engines write differently, spliced into shared statements."""

    begin_snapshot: str  # a read transaction whose statements share one snapshot
    tags_of_chunk: str  # a chunk `c`'s document's tags, sorted, joined by chr(31)
    has_kana: tuple[str, str]  # a passage `c.text` holds kana: the clause and its parameter

    def in_values(
        self, column: str, values: Sequence[object], sql_type: str
    ) -> tuple[str, list[object]]:
        """`column IN (values)` as an SQL truth value and its parameters; no values match
        nothing."""
        ...

    def tag_sizes(self, names: Sequence[str]) -> tuple[str, list[object]]:
        """A query of (name, tag, size) rows: each tag in the range [name, name + "0") (name
        and name/…) with its count of documents, for every name, and its parameters."""
        ...


ServerInfo = tuple[str | None, str | None, str | None, int]
"""(the server's URL without its password, its version, pgvector's version, bytes): no
server for SQLite, whose size is the file's and its write-ahead log's."""

IndexReport = tuple[int, tuple[str, ...], tuple[str, ...]]
"""(indexes of the store's tables, those not valid, "model (dim)" due an HNSW index and
without one): what `tsm doctor` checks of a server's indexes."""


class Catalog(Protocol):
    """What `tsm status` and `tsm doctor` read of the store itself (store/catalog.py)."""

    keyword_table: tuple[str, str]  # the keyword rows' table and its chunk id column

    def server_info(self, conn: Connection, settings: Settings) -> ServerInfo: ...

    def quick_check(self, conn: Connection) -> tuple[str, ...]: ...

    def index_report(self, conn: Connection) -> IndexReport: ...


class Schema(Protocol):
    """The schema in the engine's words: a function per step of store/migrations.py (which
    says what each changes), and how the engine runs, numbers and serialises them."""

    def m001_documents_chunks_fts(self, conn: Connection) -> None: ...

    def m002_link_name_keys(self, conn: Connection) -> None: ...

    def m003_vector_change_log(self, conn: Connection) -> None: ...

    def m004_pgvector(self, conn: Connection) -> None: ...

    def m005_postings_follow_keyword_rows(self, conn: Connection) -> None: ...

    def m006_team_scope(self, conn: Connection) -> None: ...

    def m007_keyword_index_read_from_the_index(self, conn: Connection) -> None: ...

    def m008_chunk_lines(self, conn: Connection) -> None: ...

    def m009_postings_carry_document_ids(self, conn: Connection) -> None: ...

    def m010_vector_totals(self, conn: Connection) -> None: ...

    def m011_embeddings_found_by_hash(self, conn: Connection) -> None: ...

    def m012_released_vector_hashes(self, conn: Connection) -> None: ...

    def run_script(self, conn: Connection, script: str) -> None: ...

    def schema_version(self, conn: Connection) -> int: ...

    def migrating(self, conn: Connection) -> AbstractContextManager[None]: ...

    def lock_step(self, conn: Connection) -> None: ...

    def record_version(self, conn: Connection, number: int) -> None: ...


@dataclass(frozen=True)
class Store:
    """One engine's implementation of the protocol: a module per group."""

    name: str  # as `tsm status` and an export file name it: "sqlite" or "postgresql"
    keywords: KeywordIndex
    vectors: VectorRows
    nearest: NearestIndex | None
    changes: ChangeLog
    documents: DocumentWrites
    dialect: Dialect
    catalog: Catalog
    schema: Schema
