"""Numbered schema migrations, applied in order, each in its own transaction: one list for
both stores, each step writing the SQLite or the PostgreSQL form of the same change.

On SQLite `PRAGMA user_version` holds the schema version (`status` reports it); on PostgreSQL
the highest row of `migrations`, which on both records when each step was applied.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connect import Connection

Migration = Callable[["Connection"], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_documents_chunks_fts(conn: Connection) -> None:
    if _postgres(conn):
        run_script(conn, PG_001)
        run_script(conn, PG_001_KEYWORDS)
        return
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


# Text compares byte by byte on both engines (COLLATE "C" here, SQLite's BINARY there): tag
# prefixes (`tag >= ? AND tag < ?`) and every ORDER BY must not depend on the server's locale.
# The keyword index of store/postgres/keywords.py as first written (m007 rebuilds it).
PG_001_KEYWORDS = """
    CREATE TABLE chunk_keywords (
        chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        lexemes TSVECTOR NOT NULL,
        counts JSONB NOT NULL,
        positions JSONB NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE INDEX chunk_keywords_lexemes ON chunk_keywords USING gin (lexemes);
    CREATE TABLE keyword_postings (
        lexeme TEXT NOT NULL,
        chunk_id BIGINT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
        c0 INTEGER NOT NULL,
        c1 INTEGER NOT NULL,
        c2 INTEGER NOT NULL,
        c3 INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        PRIMARY KEY (lexeme, chunk_id)
    );
    CREATE INDEX keyword_postings_chunk ON keyword_postings (chunk_id);
    CREATE FUNCTION tsm_keyword_rows(q TSQUERY, ids BIGINT[])
        RETURNS TABLE (chunk_id BIGINT, tokens INTEGER, counts JSONB)
        LANGUAGE sql STABLE ROWS 1000 SET enable_seqscan = off
        AS $$ SELECT k.chunk_id, k.tokens, k.counts FROM chunk_keywords k
              WHERE k.lexemes @@ q OR k.chunk_id = ANY(ids) $$;
    CREATE TABLE keyword_totals (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        rows BIGINT NOT NULL,
        tokens BIGINT NOT NULL
    );
    CREATE FUNCTION tsm_keyword_totals() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        n BIGINT;
        t BIGINT;
        s BIGINT;
    BEGIN
        SELECT count(*), coalesce(sum(tokens), 0) INTO n, t FROM changed;
        IF n = 0 THEN
            RETURN NULL;
        END IF;
        IF TG_OP = 'DELETE' THEN
            n := -n;
            t := -t;
        END IF;
        INSERT INTO keyword_totals(rows, tokens) VALUES (n, t) RETURNING seq INTO s;
        IF mod(s, 256) = 0 AND pg_try_advisory_xact_lock(1953721675) THEN
            WITH gone AS (DELETE FROM keyword_totals RETURNING rows, tokens)
            INSERT INTO keyword_totals(rows, tokens)
                SELECT sum(rows), sum(tokens) FROM gone HAVING count(*) > 0;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER chunk_keywords_added AFTER INSERT ON chunk_keywords
        REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION tsm_keyword_totals();
    CREATE TRIGGER chunk_keywords_removed AFTER DELETE ON chunk_keywords
        REFERENCING OLD TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION tsm_keyword_totals()
"""

PG_001 = """
    CREATE TABLE IF NOT EXISTS migrations (
        version INTEGER PRIMARY KEY,
        name TEXT COLLATE "C" NOT NULL,
        applied_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT COLLATE "C");
    CREATE TABLE documents (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        path TEXT COLLATE "C" NOT NULL UNIQUE,
        type TEXT COLLATE "C" NOT NULL,
        title TEXT COLLATE "C" NOT NULL,
        content_hash TEXT COLLATE "C" NOT NULL,
        size BIGINT NOT NULL,
        mtime DOUBLE PRECISION NOT NULL,
        category TEXT COLLATE "C" NOT NULL,
        status TEXT COLLATE "C",
        created TEXT COLLATE "C",
        updated TEXT COLLATE "C",
        doc_date TEXT COLLATE "C",
        date_source TEXT COLLATE "C",
        aliases TEXT COLLATE "C" NOT NULL DEFAULT '[]',
        text TEXT COLLATE "C" NOT NULL,
        indexed_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX documents_hash ON documents(content_hash);
    CREATE INDEX documents_date ON documents(doc_date);
    CREATE TABLE chunks (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        chunk_index INTEGER NOT NULL,
        section TEXT COLLATE "C" NOT NULL,
        page INTEGER,
        line INTEGER,
        chunk_date TEXT COLLATE "C",
        text TEXT COLLATE "C" NOT NULL,
        embed_hash TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX chunks_document ON chunks(document_id, chunk_index);
    CREATE INDEX chunks_embed_hash ON chunks(embed_hash);
    CREATE TABLE tags (
        document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        tag TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (document_id, tag)
    );
    CREATE INDEX tags_tag ON tags(tag);
    CREATE TABLE links (
        document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        target TEXT COLLATE "C" NOT NULL,
        link_type TEXT COLLATE "C" NOT NULL
    );
    CREATE INDEX links_document ON links(document_id);
    CREATE INDEX links_target ON links(target);
    CREATE TABLE embeddings (
        model TEXT COLLATE "C" NOT NULL,
        embed_hash TEXT COLLATE "C" NOT NULL,
        dim INTEGER NOT NULL,
        vector BYTEA NOT NULL,
        PRIMARY KEY (model, embed_hash)
    )
"""


@migration
def m002_link_name_keys(conn: Connection) -> None:
    """Indexed names (file stem, path, title, aliases) and link keys, so resolving a link
    costs an index lookup instead of a scan of every document."""
    import json

    from .names import document_names, link_key

    if _postgres(conn):
        row_id, row_id_type = "ctid::text", "?::tid"
        run_script(
            conn,
            """
            CREATE TABLE names (
                document_id BIGINT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
                name TEXT COLLATE "C" NOT NULL,
                kind TEXT COLLATE "C" NOT NULL
            );
            CREATE INDEX names_name ON names(name);
            CREATE INDEX names_document ON names(document_id);
            ALTER TABLE links ADD COLUMN target_key TEXT COLLATE "C" NOT NULL DEFAULT '';
            CREATE INDEX links_target_key ON links(target_key)
            """,
        )
    else:
        row_id, row_id_type = "rowid", "?"
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
        f"SELECT {row_id}, target, link_type FROM links"
    ).fetchall():
        conn.execute(
            f"UPDATE links SET target_key = ? WHERE {row_id.split('::')[0]} = {row_id_type}",
            (link_key(target, link_type), rowid),
        )


@migration
def m003_vector_change_log(conn: Connection) -> None:
    """A log of chunks whose vector may have changed (chunk added or removed, vector stored
    or dropped), filled by triggers so that every writer records it. A long-lived searcher
    (the daemon) applies only the new entries to its in-memory matrix instead of reloading
    every vector after each edit (search/vector.py).

    On PostgreSQL several writers commit in any order, so a sequence number alone cannot
    say what a reader has seen: each entry also records its transaction id, and a reader
    resumes from its last snapshot's oldest running transaction (store/vectors.py)."""
    if _postgres(conn):
        run_script(conn, PG_003)
        return
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


PG_003 = """
    CREATE TABLE vector_changes (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        chunk_id BIGINT NOT NULL,
        xid XID8 NOT NULL DEFAULT pg_current_xact_id()
    );
    CREATE INDEX vector_changes_xid ON vector_changes(xid);
    CREATE FUNCTION tsm_log_chunk() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            INSERT INTO vector_changes(chunk_id) VALUES (OLD.id); RETURN OLD;
        END IF;
        INSERT INTO vector_changes(chunk_id) VALUES (NEW.id); RETURN NEW;
    END $$;
    CREATE TRIGGER chunks_log_insert AFTER INSERT OR DELETE ON chunks
        FOR EACH ROW EXECUTE FUNCTION tsm_log_chunk();
    CREATE TRIGGER chunks_log_update AFTER UPDATE OF embed_hash, document_id ON chunks
        FOR EACH ROW EXECUTE FUNCTION tsm_log_chunk();
    CREATE FUNCTION tsm_log_embedding() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            INSERT INTO vector_changes(chunk_id)
                SELECT id FROM chunks WHERE embed_hash = OLD.embed_hash;
            RETURN OLD;
        END IF;
        INSERT INTO vector_changes(chunk_id)
            SELECT id FROM chunks WHERE embed_hash = NEW.embed_hash;
        RETURN NEW;
    END $$;
    CREATE TRIGGER embeddings_log AFTER INSERT OR DELETE ON embeddings
        FOR EACH ROW EXECUTE FUNCTION tsm_log_embedding()
"""


@migration
def m004_pgvector(conn: Connection) -> None:
    """On PostgreSQL, vectors move into pgvector's `vector` type (no fixed dimension: a
    model may change its dimension under the same name); store/postgres/vectors.py gives each
    (model, dimension) its HNSW index when its first vector is stored. On both engines a
    vector replaced in place (`ON CONFLICT ... DO UPDATE`: the model re-embedded a text,
    e.g. with another dimension) is logged too: the change log's insert trigger does not
    fire for an upsert's update, and a searcher would keep the old vector."""
    if not _postgres(conn):
        run_script(
            conn,
            """
            CREATE TRIGGER embeddings_log_update AFTER UPDATE OF dim, vector ON embeddings
            BEGIN
                INSERT INTO vector_changes(chunk_id)
                SELECT id FROM chunks WHERE embed_hash = new.embed_hash; END
            """,
        )
        return
    import numpy as np

    from .postgres.vectors import PgVector, _adapt

    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("ALTER TABLE embeddings ADD COLUMN pgvector vector")
    _adapt(conn)
    for model, embed_hash, blob in conn.execute(
        "SELECT model, embed_hash, vector FROM embeddings"
    ).fetchall():
        conn.execute(
            "UPDATE embeddings SET pgvector = ? WHERE model = ? AND embed_hash = ?",
            (PgVector(np.frombuffer(bytes(blob), dtype=np.float32)), model, embed_hash),
        )
    run_script(
        conn,
        """
        ALTER TABLE embeddings DROP COLUMN vector;
        ALTER TABLE embeddings RENAME COLUMN pgvector TO vector;
        ALTER TABLE embeddings ALTER COLUMN vector SET NOT NULL;
        CREATE TRIGGER embeddings_log_update AFTER UPDATE OF dim, vector ON embeddings
            FOR EACH ROW EXECUTE FUNCTION tsm_log_embedding()
        """,
    )


@migration
def m005_postings_follow_keyword_rows(conn: Connection) -> None:
    """On PostgreSQL a chunk's postings go with its keyword row (a statement trigger on
    `chunk_keywords`) instead of by a foreign key to `chunks`: the key checked every posting
    written, about a hundred a chunk, each a lookup and a row lock on `chunks` (9 of the 54 s
    a 10k-chunk `tsm index` took there). A posting is written in the statement that writes
    its keyword row, whose own key still checks the chunk once, and every way a chunk goes
    (its document replaced or removed) takes the keyword row and so the postings with it.
    Nothing changes on SQLite, whose FTS5 table has no postings of ours."""
    if not _postgres(conn):
        return
    run_script(
        conn,
        """
        ALTER TABLE keyword_postings DROP CONSTRAINT IF EXISTS keyword_postings_chunk_id_fkey;
        CREATE FUNCTION tsm_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM keyword_postings p USING changed c WHERE p.chunk_id = c.chunk_id;
            RETURN NULL;
        END $$;
        CREATE TRIGGER chunk_keywords_unposted AFTER DELETE ON chunk_keywords
            REFERENCING OLD TABLE AS changed
            FOR EACH STATEMENT EXECUTE FUNCTION tsm_drop_postings()
        """,
    )


@migration
def m006_team_scope(conn: Connection) -> None:
    """On PostgreSQL, each document records the workspace (root) and the member that wrote it,
    and whether a transcript is shared (store/scope.py): a path is unique within its
    workspace, no longer across the team. Rows from before keep workspace '' (adopted by the
    first run that writes their path) and no owner, so no member sees their transcripts
    until their owner's next run writes them again. Nothing changes on SQLite."""
    if not _postgres(conn):
        return
    run_script(
        conn,
        """
        CREATE TABLE workspaces (
            id TEXT COLLATE "C" PRIMARY KEY,
            member TEXT COLLATE "C" NOT NULL,
            named BOOLEAN NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        ALTER TABLE documents ADD COLUMN workspace TEXT COLLATE "C" NOT NULL DEFAULT '';
        ALTER TABLE documents ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT '';
        ALTER TABLE documents ADD COLUMN shared BOOLEAN NOT NULL DEFAULT false;
        ALTER TABLE documents DROP CONSTRAINT documents_path_key;
        CREATE UNIQUE INDEX documents_workspace_path ON documents(workspace, path);
        CREATE INDEX documents_path ON documents(path);
        CREATE INDEX documents_private ON documents(owner) WHERE type = 'session' AND NOT shared
        """,
    )


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
    if not _postgres(conn):
        return
    run_script(conn, PG_007)


PG_007 = """
    DROP FUNCTION tsm_keyword_rows(TSQUERY, BIGINT[]);
    ALTER TABLE chunk_keywords ADD COLUMN terms TEXT COLLATE "C";
    UPDATE chunk_keywords k SET terms = (
        SELECT string_agg(coalesce((
            SELECT string_agg(e.key, ' ' ORDER BY o.pos::int)
            FROM jsonb_each(k.positions) e, jsonb_array_elements_text(e.value -> col) AS o(pos)
        ), ''), E'\\n' ORDER BY col)
        FROM generate_series(0, 3) AS col);
    ALTER TABLE chunk_keywords ALTER COLUMN terms SET NOT NULL;
    ALTER TABLE chunk_keywords DROP COLUMN lexemes, DROP COLUMN counts, DROP COLUMN positions;
    ALTER TABLE keyword_postings DROP CONSTRAINT keyword_postings_pkey;
    ALTER TABLE keyword_postings ALTER COLUMN lexeme TYPE TEXT COLLATE "C";
    ALTER TABLE keyword_postings ADD CONSTRAINT keyword_postings_pkey
        PRIMARY KEY (lexeme, chunk_id) INCLUDE (c0, c1, c2, c3, tokens);
    DROP INDEX keyword_postings_chunk;
    CREATE OR REPLACE FUNCTION tsm_drop_postings() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM keyword_postings p
        USING (SELECT DISTINCT c.chunk_id, t.lexeme FROM changed c,
                      regexp_split_to_table(c.terms, '\\s+') AS t(lexeme)
               WHERE t.lexeme <> '') g
        WHERE p.lexeme = g.lexeme AND p.chunk_id = g.chunk_id;
        RETURN NULL;
    END $$
"""


def _postgres(conn: Any) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgres"


def run_script(conn: Connection, script: str) -> None:
    """Run `;`-separated DDL inside the current transaction (executescript would COMMIT it).
    A trigger body holds `;` too: pieces are joined until they form a complete statement
    (on PostgreSQL, until its `$$` quotes are closed)."""
    if _postgres(conn):
        for statement in _pg_statements(script):
            conn.execute(statement)
        return
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                conn.execute(pending)
            pending = ""
    if pending.strip(" \n;"):
        conn.execute(pending)


def _pg_statements(script: str) -> list[str]:
    statements, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if pending.count("$$") % 2 == 0:
            if pending.strip(" \n;"):
                statements.append(pending)
            pending = ""
    if pending.strip(" \n;"):
        statements.append(pending)
    return statements


def schema_version(conn: Connection) -> int:
    if _postgres(conn):
        exists = conn.execute("SELECT to_regclass('migrations') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM migrations").fetchone()[0])
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


# Held for the duration of a migration on PostgreSQL: two machines opening a new database at
# once must not both create its tables (any constant of ours; "tsm" in ASCII).
_PG_MIGRATION_LOCK = 0x74736D


def apply(conn: Connection, on_create: Migration | None = None) -> int:
    """Bring the schema up to date; returns the resulting version.

    On PostgreSQL the lock is taken before the migrations' transactions begin (a session
    lock): a transaction that began before it waited would keep its catalog cache from
    before the other process's tables existed (`to_regclass` says none), and run m001
    again ("relation meta already exists" when several writers open a new database)."""
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
    if not _postgres(conn) or version >= len(MIGRATIONS):
        return _apply(conn, version, on_create)
    conn.execute("SELECT pg_advisory_lock(?)", (_PG_MIGRATION_LOCK,))
    try:
        return _apply(conn, schema_version(conn), on_create)
    finally:
        conn.execute("SELECT pg_advisory_unlock(?)", (_PG_MIGRATION_LOCK,))


def _apply(conn: Connection, version: int, on_create: Migration | None = None) -> int:
    """`on_create` runs in the first migration's transaction: whoever sees the new schema
    sees what it writes (the SQLite index's seal, store/sqlite/provenance.py)."""
    for number, step in enumerate(MIGRATIONS, start=1):
        if number <= version:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _postgres(conn):
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,))
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
            if not _postgres(conn):
                conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite already rolled back after a full disk
                conn.execute("ROLLBACK")
            raise
    return schema_version(conn)


LATEST = len(MIGRATIONS)
