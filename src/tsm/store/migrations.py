"""Numbered schema migrations, applied in order, each in its own transaction: one list for
both stores, each step saying what it changes and each engine writing its own form of it
(store/sqlite/schema.py, store/postgres/schema.py, a function of the step's name in each).

On SQLite `PRAGMA user_version` holds the schema version (`status` reports it); on PostgreSQL
the highest row of `migrations`, which on both records when each step was applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .engine import store_of

if TYPE_CHECKING:
    from .connect import Connection

Migration = Callable[["Connection"], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_documents_chunks_fts(conn: Connection) -> None:
    """The documents, their chunks and keyword index, tags, links, vectors and meta."""
    store_of(conn).schema.m001_documents_chunks_fts(conn)


@migration
def m002_link_name_keys(conn: Connection) -> None:
    """Indexed names (file stem, path, title, aliases) and link keys, so resolving a link
    costs an index lookup instead of a scan of every document."""
    store_of(conn).schema.m002_link_name_keys(conn)


@migration
def m003_vector_change_log(conn: Connection) -> None:
    """A log of chunks whose vector may have changed (chunk added or removed, vector stored
    or dropped), filled by triggers so that every writer records it. A long-lived searcher
    (the daemon) applies only the new entries to its in-memory matrix instead of reloading
    every vector after each edit (search/vector.py).

    On PostgreSQL several writers commit in any order, so a sequence number alone cannot
    say what a reader has seen: each entry also records its transaction id, and a reader
    resumes from its last snapshot's oldest running transaction (store/vectors.py)."""
    store_of(conn).schema.m003_vector_change_log(conn)


@migration
def m004_pgvector(conn: Connection) -> None:
    """On PostgreSQL, vectors move into pgvector's `vector` type (no fixed dimension: a
    model may change its dimension under the same name); store/postgres/vectors.py gives each
    (model, dimension) its HNSW index when its first vector is stored. On both engines a
    vector replaced in place (`ON CONFLICT ... DO UPDATE`: the model re-embedded a text,
    e.g. with another dimension) is logged too: the change log's insert trigger does not
    fire for an upsert's update, and a searcher would keep the old vector."""
    store_of(conn).schema.m004_pgvector(conn)


@migration
def m005_postings_follow_keyword_rows(conn: Connection) -> None:
    """On PostgreSQL a chunk's postings go with its keyword row (a statement trigger on
    `chunk_keywords`) instead of by a foreign key to `chunks`: the key checked every posting
    written, about a hundred a chunk, each a lookup and a row lock on `chunks` (9 of the 54 s
    a 10k-chunk `tsm index` took there). A posting is written in the statement that writes
    its keyword row, whose own key still checks the chunk once, and every way a chunk goes
    (its document replaced or removed) takes the keyword row and so the postings with it.
    Nothing changes on SQLite, whose FTS5 table has no postings of ours."""
    store_of(conn).schema.m005_postings_follow_keyword_rows(conn)


@migration
def m006_team_scope(conn: Connection) -> None:
    """On PostgreSQL, each document records the workspace (root) and the member that wrote it,
    and whether a transcript is shared (store/scope.py): a path is unique within its
    workspace, no longer across the team. Rows from before keep workspace '' (adopted by the
    first run that writes their path) and no owner, so no member sees their transcripts
    until their owner's next run writes them again. Nothing changes on SQLite."""
    store_of(conn).schema.m006_team_scope(conn)


@migration
def m007_keyword_index_read_from_the_index(conn: Connection) -> None:
    """On PostgreSQL the keyword index is read by index-only scans (store/postgres/keywords.py):
    the postings' primary key carries each posting's counts and token count (INCLUDE), so a
    term's postings are one range of the btree instead of a heap page each, and the lexeme
    compares bytewise (COLLATE "C"). A chunk's keyword row keeps its terms in order as text
    (for phrases) instead of a tsvector, counts and offsets in JSON: a search no longer
    reads them, and a write no longer builds them. A chunk's postings go with its keyword
    row by their primary key (its terms name them), so no second index on the postings
    costs every write. Nothing changes on SQLite."""
    store_of(conn).schema.m007_keyword_index_read_from_the_index(conn)


@migration
def m008_chunk_lines(conn: Connection) -> None:
    """A chunk's `line` is the line of its file on which its text starts, where a search's
    hit opens (the chunker counts it; none for PDFs and transcripts). It held the section's
    first line, the same for every piece of a long section, and a transcript turn's line
    in its JSONL: those rows are cleared, and until their file is indexed again the
    terminal's listing looks the line up in the note, as it did before."""
    store_of(conn).schema.m008_chunk_lines(conn)


@migration
def m009_postings_carry_document_ids(conn: Connection) -> None:
    """On PostgreSQL each keyword posting carries its chunk's document id in the index entry
    (INCLUDE), so the keyword ranking gives each hit its document without reading `chunks`
    once per ranked chunk. A chunk never changes document, so the copy cannot go stale.
    Nothing changes on SQLite."""
    store_of(conn).schema.m009_postings_carry_document_ids(conn)


@migration
def m010_vector_totals(conn: Connection) -> None:
    """On PostgreSQL, the statistics of the vectors that a search's HNSW path reads (per
    model and dimension, the chunks with a vector and the sum of their vectors; every
    chunk) are kept by each write of chunks or vectors, in its transaction, instead of
    being recomputed by a search with a scan of every vector (store/postgres/schema.py says
    how writers at once stay exact); this step computes them once for the vectors already
    stored. Nothing changes on SQLite, whose searcher holds the matrix."""
    store_of(conn).schema.m010_vector_totals(conn)


@migration
def m011_embeddings_found_by_hash(conn: Connection) -> None:
    """On PostgreSQL, an index on the vectors' hash alone. Every write of chunks looks up the
    vectors of its chunks' hashes, whatever their model (m010's statistics); the key starts
    with the model, so a server without skip scan (before PostgreSQL 18) read the whole key
    index for each chunk written. Nothing changes on SQLite, which looks a vector up by
    model and hash."""
    store_of(conn).schema.m011_embeddings_found_by_hash(conn)


@migration
def m012_released_vector_hashes(conn: Connection) -> None:
    """`released_hashes`: the text hashes that chunks stopped using (a chunk deleted, or its
    hash changed), written by triggers in the writer's own transaction. The sweep of vectors
    no chunk uses (vectors.drop_orphans) looks at these only, where it read every vector
    after each embedding run. Seeded with the vectors no chunk uses now. On SQLite, an index
    on the vectors' hash alone, which the sweep looks them up by (PostgreSQL has it: m011)."""
    store_of(conn).schema.m012_released_vector_hashes(conn)


def schema_version(conn: Connection) -> int:
    return store_of(conn).schema.schema_version(conn)


def apply(conn: Connection, on_create: Migration | None = None, *, up_to: int | None = None) -> int:
    """Bring the schema up to date, or up to version `up_to` (a store as an older tsm left
    it, for the tests of a migration); returns the resulting version. The engine's
    `migrating` holds off other processes opening the same new store meanwhile
    (PostgreSQL)."""
    steps = MIGRATIONS[:up_to]
    version = schema_version(conn)
    if version > len(MIGRATIONS):
        # A newer tsm's index (or a cloned repository's .tsm/ claiming one): this tsm would
        # write rows without what that schema added, and read what it changed wrongly.
        from ..errors import IndexCorrupt

        raise IndexCorrupt(
            f"the index has schema version {version}, newer than this tsm's {len(MIGRATIONS)}:"
            " a newer tsm wrote it, and this one does not read or write it",
            "upgrade tsm, or move the index aside and run `tsm index` to build one",
        )
    if version >= len(steps):
        return _apply(conn, steps, version, on_create)
    with store_of(conn).schema.migrating(conn):
        return _apply(conn, steps, schema_version(conn), on_create)


def _apply(
    conn: Connection,
    steps: Sequence[Migration],
    version: int,
    on_create: Migration | None = None,
) -> int:
    """`on_create` runs in the first migration's transaction: whoever sees the new schema
    sees what it writes (the SQLite index's seal, store/sqlite/provenance.py)."""
    schema = store_of(conn).schema
    for number, step in enumerate(steps, start=1):
        if number <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            schema.lock_step(conn)
            if schema_version(conn) >= number:  # another process migrated meanwhile
                conn.execute("ROLLBACK")
                continue
            step(conn)
            if number == 1 and on_create is not None:
                on_create(conn)
            conn.execute(
                "INSERT INTO migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (number, step.__name__, time.time()),
            )
            schema.record_version(conn, number)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite already rolled back after a full disk
                conn.execute("ROLLBACK")
            raise
    return schema_version(conn)


LATEST = len(MIGRATIONS)
