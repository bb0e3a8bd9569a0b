"""Documents, chunks, tags, links and their FTS rows: written and removed together.

Several writers (two `tsm index` on two machines, a daemon) may share one PostgreSQL store:
each transaction that writes or removes documents first takes `lock_paths` on their paths,
then checks again what it decided before the lock (indexing.py; store/postgres/documents.py
says why a lock). A document's id doubles as its version: every write inserts the document
anew, so a removal or a touch by a stale id changes nothing. SQLite needs no lock: `BEGIN
IMMEDIATE` lets one writer in at a time (store/sqlite/documents.py).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..models import Chunk, Document
from . import keywords, scope
from .connect import Connection
from .engine import store_of
from .names import document_names, link_key, stored_aliases
from .protocol import DocumentContents


@dataclass(frozen=True)
class StoredFile:
    """What the index remembers about a file, to decide whether it needs work."""

    id: int
    path: str
    size: int
    mtime: float
    content_hash: str


@dataclass(frozen=True)
class ChunkRow:
    """A chunk ready to store: its text, the FTS columns and the key of its embedding."""

    chunk: Chunk
    fts_title: str
    fts_section: str
    fts_body: str
    embed_hash: str


def lock_paths(conn: Connection, paths: Sequence[str]) -> None:
    """Hold the documents at `paths` (and the writers' shared lock) until the transaction
    ends, so that one writer at a time decides about and writes each path, on every machine
    sharing a PostgreSQL store. Locks are taken in sorted order, so two writers that each
    lock several paths cannot deadlock. Call first thing in the transaction. A no-op on
    SQLite, whose write transactions are already serial."""
    store_of(conn).documents.lock_paths(conn, paths)


def exclude_writers(conn: Connection) -> None:
    """Wait until no document writer is inside a transaction, and keep new ones waiting
    until this transaction ends (PostgreSQL; SQLite's writers are serial already)."""
    store_of(conn).documents.exclude_writers(conn)


# Every look-up below that decides what to write or remove sees only the connection's own
# workspace (store/scope.py): in a team store an index run never touches another root's rows.


def stored_files(conn: Connection) -> dict[str, StoredFile]:
    mine, params = scope.own(conn)
    rows = conn.execute(
        f"SELECT id, path, size, mtime, content_hash FROM documents WHERE {mine}", params
    )
    return {r[1]: StoredFile(*r) for r in rows}


def stored_file(conn: Connection, path: str) -> StoredFile | None:
    mine, params = scope.own(conn)
    row = conn.execute(
        f"SELECT id, path, size, mtime, content_hash FROM documents WHERE path = ? AND {mine}",
        (path, *params),
    ).fetchone()
    return StoredFile(*row) if row else None


def stored_files_at(conn: Connection, paths: Sequence[str]) -> dict[str, StoredFile]:
    """stored_file of several paths, in one statement."""
    mine, params = scope.own(conn)
    among, among_params = store_of(conn).dialect.in_values("path", paths, "text")
    rows = conn.execute(
        f"SELECT id, path, size, mtime, content_hash FROM documents WHERE {among} AND {mine}",
        (*among_params, *params),
    )
    return {r[1]: StoredFile(*r) for r in rows}


def session_paths(conn: Connection) -> list[str]:
    """The stored paths of every session transcript, sorted (indexing.session_key wrote
    them: relative to the index root, `~/…` or absolute)."""
    mine, params = scope.own(conn)
    rows = conn.execute(
        f"SELECT path FROM documents WHERE type = 'session' AND {mine} ORDER BY path", params
    )
    return [path for (path,) in rows]


def stored_and_twins(
    conn: Connection, path: str, content_hash: str
) -> tuple[StoredFile | None, list[StoredFile]]:
    """In one query: what is stored at `path`, and the other documents with these bytes."""
    mine, params = scope.own(conn)
    rows = conn.execute(
        f"""SELECT id, path, size, mtime, content_hash FROM documents
           WHERE (path = ? OR content_hash = ?) AND {mine}""",
        (path, content_hash, *params),
    )
    found = [StoredFile(*r) for r in rows]
    current = next((f for f in found if f.path == path), None)
    return current, [f for f in found if f.path != path]


def lock_twin(conn: Connection, path: str) -> bool:
    """Try to hold another path besides the one locked (documents.lock_paths): False, and no
    wait, when a writer holds it (so two writers' locks cannot wait for each other)."""
    return store_of(conn).documents.lock_twin(conn, path)


def find_by_hash(conn: Connection, content_hash: str) -> list[StoredFile]:
    mine, params = scope.own(conn)
    rows = conn.execute(
        "SELECT id, path, size, mtime, content_hash FROM documents "
        f"WHERE content_hash = ? AND {mine}",
        (content_hash, *params),
    )
    return [StoredFile(*r) for r in rows]


def write_document(
    conn: Connection,
    doc: Document,
    rows: Sequence[ChunkRow],
    *,
    content_hash: str,
    size: int,
    mtime: float,
    category: str,
    fts_tags: str,
) -> int:
    """Insert or replace one document with all its chunks; its id. Call inside a
    transaction."""
    return send_document(
        conn,
        doc,
        rows,
        content_hash=content_hash,
        size=size,
        mtime=mtime,
        category=category,
        fts_tags=fts_tags,
    )()


def send_document(
    conn: Connection,
    doc: Document,
    rows: Sequence[ChunkRow],
    *,
    content_hash: str,
    size: int,
    mtime: float,
    category: str,
    fts_tags: str,
) -> Callable[[], int]:
    """write_document without waiting for the new document's id: on PostgreSQL the write
    joins the transaction's pipeline and nothing waits for the server until the commit.
    The function returned reads the id."""
    team = scope.writing(conn)
    if team is not None:  # one round trip: the keys cascade to chunks and their keyword rows
        conn.execute(  # this workspace's row, and a row from before workspaces (adopted)
            "DELETE FROM documents WHERE path = ? AND workspace IN (?, ?)",
            (doc.path, team.workspace, scope.LEGACY),
        )
    else:
        store_of(conn).documents.remove_path(conn, doc.path)
    columns = list(_DOCUMENT_COLUMNS)
    values: list[object] = [
        doc.path,
        doc.type,
        doc.title,
        content_hash,
        size,
        mtime,
        category,
        doc.status,
        doc.created,
        doc.updated,
        doc.date,
        doc.date_source,
        json.dumps(list(doc.aliases), ensure_ascii=False),
        doc.text,
        time.time(),
    ]
    if team is not None:
        columns += ["workspace", "owner", "shared"]
        values += [team.workspace, team.member, team.share and doc.type == "session"]
    contents = DocumentContents(
        chunks=[
            (
                r.chunk.index,
                r.chunk.section,
                r.chunk.page,
                r.chunk.line,
                r.chunk.date,
                r.chunk.text,
                r.embed_hash,
            )
            for r in rows
        ],  # fmt: skip
        keywords=[(r.fts_title, r.fts_section, r.fts_body, fts_tags) for r in rows],
        tags=list(doc.tags),
        links=[
            (link.target, link.link_type, link_key(link.target, link.link_type))
            for link in doc.links
        ],
        names=document_names(doc.path, doc.title, doc.aliases),
    )
    return store_of(conn).documents.insert_document(conn, columns, values, contents)


_DOCUMENT_COLUMNS = (
    "path", "type", "title", "content_hash", "size", "mtime", "category", "status", "created",
    "updated", "doc_date", "date_source", "aliases", "text", "indexed_at",
)  # fmt: skip


def delete_document(conn: Connection, doc_id: int) -> bool:
    """Remove a document, its chunks and their keyword rows (FTS5 has no cascade); False
    when there was no document `doc_id` (another writer removed or rewrote it first)."""
    keywords.delete_document(conn, doc_id)
    return conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,)).rowcount > 0


def touch(conn: Connection, doc_id: int, size: int, mtime: float) -> bool:
    """Record a file's new size and mtime (its content is unchanged); False when document
    `doc_id` is gone (another writer removed or rewrote it)."""
    cur = conn.execute(
        "UPDATE documents SET size = ?, mtime = ? WHERE id = ?", (size, mtime, doc_id)
    )
    return cur.rowcount > 0


def copy_document(conn: sqlite3.Connection, schema: str, path: str) -> bool:
    """Copy the document stored as `path` in the attached DB `schema` (same schema version)
    with its chunks, FTS rows, tags, links and names, under new ids. Call inside a
    transaction. False when `schema` has no such document. SQLite only: `tsm rebuild`."""
    old = conn.execute(f"SELECT id FROM {schema}.documents WHERE path = ?", (path,)).fetchone()
    if old is None:
        return False
    columns = (
        "path, type, title, content_hash, size, mtime, category, status, created, "
        "updated, doc_date, date_source, aliases, text, indexed_at"
    )
    doc_id = conn.execute(
        f"INSERT INTO documents({columns}) SELECT {columns} FROM {schema}.documents WHERE id = ?",
        (old[0],),
    ).lastrowid
    chunks = conn.execute(
        f"""SELECT id, chunk_index, section, page, line, chunk_date, text, embed_hash
            FROM {schema}.chunks WHERE document_id = ? ORDER BY chunk_index""",
        (old[0],),
    ).fetchall()
    for old_chunk, *fields in chunks:
        chunk_id = conn.execute(
            """INSERT INTO chunks(document_id, chunk_index, section, page, line, chunk_date,
                   text, embed_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            (doc_id, *fields),
        ).lastrowid
        conn.execute(
            f"""INSERT INTO chunks_fts(rowid, title, section, body, tags)
                         SELECT ?, title, section, body, tags FROM {schema}.chunks_fts
                         WHERE rowid = ?""",
            (chunk_id, old_chunk),
        )
    for table, cols in (
        ("tags", "tag"),
        ("links", "target, link_type, target_key"),
        ("names", "name, kind"),
    ):
        conn.execute(
            f"INSERT OR IGNORE INTO {table}(document_id, {cols}) SELECT ?, {cols} "
            f"FROM {schema}.{table} WHERE document_id = ?",
            (doc_id, old[0]),
        )
    return True


def document_ids(conn: Connection) -> list[int]:
    """This workspace's document ids (`tsm reindex` rebuilds their keyword rows): in a team
    store another root's rows are its own to rebuild, with its own tokenizer."""
    mine, params = scope.own(conn)
    return [
        r[0] for r in conn.execute(f"SELECT id FROM documents WHERE {mine} ORDER BY id", params)
    ]


@dataclass(frozen=True)
class KeywordSource:
    """What a document's keyword rows are made of (stored text, not the file)."""

    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    chunks: tuple[tuple[int, str, str], ...]  # (chunk id, section, text)


def keyword_source(conn: Connection, doc_id: int) -> KeywordSource | None:
    """None when the document is gone."""
    doc = conn.execute("SELECT title, aliases FROM documents WHERE id = ?", (doc_id,)).fetchone()
    if doc is None:
        return None
    tags = conn.execute("SELECT tag FROM tags WHERE document_id = ? ORDER BY tag", (doc_id,))
    chunks = conn.execute("SELECT id, section, text FROM chunks WHERE document_id = ?", (doc_id,))
    return KeywordSource(
        doc[0],
        stored_aliases(doc[1], f"document {doc_id}"),
        tuple(r[0] for r in tags),
        tuple((r[0], r[1], r[2]) for r in chunks),
    )


def replace_keyword_rows(
    conn: Connection, doc_id: int, rows: Sequence[tuple[int, str, str, str, str]]
) -> None:
    """Swap a document's keyword rows for `rows` of (chunk id, title, section, body, tags)."""
    keywords.delete_document(conn, doc_id)
    keywords.insert(conn, rows)


def has_any(conn: Connection) -> bool:
    """Whether anything is indexed at all (in a team store: by this workspace)."""
    mine, params = scope.own(conn)
    return (
        conn.execute(f"SELECT 1 FROM documents WHERE {mine} LIMIT 1", params).fetchone() is not None
    )


def has_under(conn: Connection, rel: str, *, itself: bool = False) -> bool:
    """Whether a document is stored under the folder `rel` (or at `rel` itself, `itself`),
    by this workspace in a team store."""
    mine, params = scope.own(conn)
    like = rel.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
    sql = f"SELECT 1 FROM documents WHERE path LIKE ? ESCAPE '\\' AND {mine} LIMIT 1"
    if itself:
        sql = (
            "SELECT 1 FROM documents WHERE (path = ? OR path LIKE ? ESCAPE '\\') "
            f"AND {mine} LIMIT 1"
        )
        return conn.execute(sql, (rel, like, *params)).fetchone() is not None
    return conn.execute(sql, (like, *params)).fetchone() is not None
