"""Numbered schema migrations, applied in order, each in its own transaction.

`PRAGMA user_version` holds the schema version (`status` reports it); the `migrations` table
records when each was applied.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_documents_chunks_fts(conn: sqlite3.Connection) -> None:
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


@migration
def m002_link_name_keys(conn: sqlite3.Connection) -> None:
    """Indexed names (file stem, path, title, aliases) and link keys, so resolving a link
    costs an index lookup instead of a scan of every document."""
    import json

    from .names import document_names, link_key

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
    for doc_id, path, title, aliases in conn.execute(
        "SELECT id, path, title, aliases FROM documents"
    ).fetchall():
        conn.executemany(
            "INSERT INTO names(document_id, name, kind) VALUES (?, ?, ?)",
            [(doc_id, n, k) for n, k in document_names(path, title, json.loads(aliases or "[]"))],
        )
    for rowid, target, link_type in conn.execute(
        "SELECT rowid, target, link_type FROM links"
    ).fetchall():
        conn.execute(
            "UPDATE links SET target_key = ? WHERE rowid = ?", (link_key(target, link_type), rowid)
        )


@migration
def m003_vector_change_log(conn: sqlite3.Connection) -> None:
    """A log of chunks whose vector may have changed (chunk added or removed, vector stored
    or dropped), filled by triggers so that every writer records it. A long-lived searcher
    (the daemon) applies only the new entries to its in-memory matrix instead of reloading
    every vector after each edit (search/vector.py)."""
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


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run `;`-separated DDL inside the current transaction (executescript would COMMIT it).
    A trigger body holds `;` too: pieces are joined until they form a complete statement."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                conn.execute(pending)
            pending = ""
    if pending.strip(" \n;"):
        conn.execute(pending)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def apply(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the resulting version."""
    version = schema_version(conn)
    for number, step in enumerate(MIGRATIONS, start=1):
        if number <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if schema_version(conn) >= number:  # another process migrated meanwhile
                conn.execute("ROLLBACK")
                continue
            step(conn)
            conn.execute(
                "INSERT INTO migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (number, step.__name__, time.time()),
            )
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite already rolled back after a full disk
                conn.execute("ROLLBACK")
            raise
    return schema_version(conn)


LATEST = len(MIGRATIONS)
