"""The schema in SQLite: each step of store/migrations.py in SQLite's words (the steps that
change only PostgreSQL's tables do nothing here). `PRAGMA user_version` holds the schema
version, which `tsm status` reports."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from ..names import fill_names_and_link_keys

if TYPE_CHECKING:
    from ..connect import Connection


def m001_documents_chunks_fts(conn: Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS migrations (
            version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            type TEXT NOT NULL,
            title TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime REAL NOT NULL,
            category TEXT NOT NULL,
            status TEXT,
            created TEXT,
            updated TEXT,
            doc_date TEXT,
            date_source TEXT,
            aliases TEXT NOT NULL DEFAULT '[]',
            text TEXT NOT NULL,
            indexed_at REAL NOT NULL
        );
        CREATE INDEX documents_hash ON documents(content_hash);
        CREATE INDEX documents_date ON documents(doc_date);
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            chunk_index INTEGER NOT NULL,
            section TEXT NOT NULL,
            page INTEGER,
            line INTEGER,
            chunk_date TEXT,
            text TEXT NOT NULL,
            embed_hash TEXT NOT NULL
        );
        CREATE INDEX chunks_document ON chunks(document_id, chunk_index);
        CREATE INDEX chunks_embed_hash ON chunks(embed_hash);
        CREATE TABLE tags (
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (document_id, tag)
        ) WITHOUT ROWID;
        CREATE INDEX tags_tag ON tags(tag);
        CREATE TABLE links (
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            target TEXT NOT NULL,
            link_type TEXT NOT NULL
        );
        CREATE INDEX links_document ON links(document_id);
        CREATE INDEX links_target ON links(target);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, section, body, tags,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE embeddings (
            model TEXT NOT NULL,
            embed_hash TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model, embed_hash)
        ) WITHOUT ROWID;
        """,
    )


def m002_link_name_keys(conn: Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE names (
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            kind TEXT NOT NULL
        );
        CREATE INDEX names_name ON names(name);
        CREATE INDEX names_document ON names(document_id);
        ALTER TABLE links ADD COLUMN target_key TEXT NOT NULL DEFAULT '';
        CREATE INDEX links_target_key ON links(target_key)
    """,
    )
    fill_names_and_link_keys(conn, "rowid", "?")


def m003_vector_change_log(conn: Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE vector_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id INTEGER NOT NULL
        );
        CREATE TRIGGER chunks_log_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO vector_changes(chunk_id) VALUES (new.id); END;
        CREATE TRIGGER chunks_log_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO vector_changes(chunk_id) VALUES (old.id); END;
        CREATE TRIGGER chunks_log_update AFTER UPDATE OF embed_hash, document_id ON chunks BEGIN
            INSERT INTO vector_changes(chunk_id) VALUES (new.id); END;
        CREATE TRIGGER embeddings_log_insert AFTER INSERT ON embeddings BEGIN
            INSERT INTO vector_changes(chunk_id)
            SELECT id FROM chunks WHERE embed_hash = new.embed_hash; END;
        CREATE TRIGGER embeddings_log_delete AFTER DELETE ON embeddings BEGIN
            INSERT INTO vector_changes(chunk_id)
            SELECT id FROM chunks WHERE embed_hash = old.embed_hash; END
    """,
    )


def m004_pgvector(conn: Connection) -> None:
    run_script(
        conn,
        """
            CREATE TRIGGER embeddings_log_update AFTER UPDATE OF dim, vector ON embeddings
            BEGIN
                INSERT INTO vector_changes(chunk_id)
                SELECT id FROM chunks WHERE embed_hash = new.embed_hash; END
            """,
    )


def m005_postings_follow_keyword_rows(conn: Connection) -> None:
    """Nothing: FTS5's table has no postings of ours."""


def m006_team_scope(conn: Connection) -> None:
    """Nothing: one file, one root, one person."""


def m007_keyword_index_read_from_the_index(conn: Connection) -> None:
    """Nothing: FTS5 keeps its own index."""


def m008_chunk_lines(conn: Connection) -> None:
    conn.execute("UPDATE chunks SET line = NULL WHERE line IS NOT NULL")


def m009_postings_carry_document_ids(conn: Connection) -> None:
    """Nothing: FTS5 keeps its own index."""


def m010_vector_totals(conn: Connection) -> None:
    """Nothing: the searcher holds the matrix and its counts (search/vector.py)."""


def m011_embeddings_found_by_hash(conn: Connection) -> None:
    """Nothing: no statement here looks a vector up by its hash without its model."""


def m012_released_vector_hashes(conn: Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE released_hashes (embed_hash TEXT NOT NULL);
        CREATE INDEX embeddings_embed_hash ON embeddings(embed_hash);
        CREATE TRIGGER chunks_release_deleted AFTER DELETE ON chunks BEGIN
            INSERT INTO released_hashes(embed_hash) VALUES (old.embed_hash); END;
        CREATE TRIGGER chunks_release_changed AFTER UPDATE OF embed_hash ON chunks
            WHEN old.embed_hash IS NOT new.embed_hash BEGIN
            INSERT INTO released_hashes(embed_hash) VALUES (old.embed_hash); END;
        INSERT INTO released_hashes(embed_hash)
            SELECT DISTINCT e.embed_hash FROM embeddings e
            WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = e.embed_hash)
        """,
    )


# The steps in the order of store/migrations.py's list (a test checks the two agree): what
# provenance.py builds its reference schema from.
STEPS = (
    m001_documents_chunks_fts,
    m002_link_name_keys,
    m003_vector_change_log,
    m004_pgvector,
    m005_postings_follow_keyword_rows,
    m006_team_scope,
    m007_keyword_index_read_from_the_index,
    m008_chunk_lines,
    m009_postings_carry_document_ids,
    m010_vector_totals,
    m011_embeddings_found_by_hash,
    m012_released_vector_hashes,
)


def run_script(conn: Connection, script: str) -> None:
    """A trigger body holds `;` too: pieces are joined until they form a complete statement."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                conn.execute(pending)
            pending = ""
    if pending.strip(" \n;"):
        conn.execute(pending)


def schema_version(conn: Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrating(conn: Connection) -> AbstractContextManager[None]:
    """Nothing to hold: `BEGIN IMMEDIATE` lets one migrating process in at a time."""
    return nullcontext()


def lock_step(conn: Connection) -> None:
    """Nothing to take: the step's `BEGIN IMMEDIATE` is the lock."""


def record_version(conn: Connection, number: int) -> None:
    conn.execute(f"PRAGMA user_version = {number}")
