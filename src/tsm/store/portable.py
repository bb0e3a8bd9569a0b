"""The rows of an index in a form that does not depend on the engine, for `tsm export` and
`tsm import` (core/transfer.py): documents with their chunks, tags, links and names, the
`meta` rows, and every vector as its float32 bytes. Ids are not part of it: a document is
known by its path, a vector by (model, hash of the embedded text), and the importing store
gives new ids. Keyword rows are not either: the importer rebuilds them from the stored text
with its own tokenizer (store/keywords.py), so the same file loads into SQLite's FTS5 index
or PostgreSQL's."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import documents, keywords, scope
from .connect import Connection
from .engine import store_of

if TYPE_CHECKING:
    import numpy as np

# The meta keys that describe one engine's bookkeeping, not the index: never carried over.
LOCAL_META = frozenset({"vector_changes_pruned_xid"})

# The documents table's columns, without its id, in the order of PortableDocument's fields.
DOCUMENT_COLUMNS = (
    "path",
    "type",
    "title",
    "content_hash",
    "size",
    "mtime",
    "category",
    "status",
    "created",
    "updated",
    "doc_date",
    "date_source",
    "aliases",
    "text",
    "indexed_at",
)
CHUNK_COLUMNS = ("chunk_index", "section", "page", "line", "chunk_date", "text", "embed_hash")


@dataclass(frozen=True)
class PortableChunk:
    chunk_index: int
    section: str
    page: int | None
    line: int | None
    chunk_date: str | None
    text: str
    embed_hash: str


@dataclass(frozen=True)
class PortableLink:
    target: str
    link_type: str
    target_key: str


@dataclass(frozen=True)
class PortableName:
    name: str
    kind: str


@dataclass(frozen=True)
class PortableDocument:
    """One row of `documents` (`aliases` as stored: a JSON array) and the rows that hang
    from it."""

    path: str
    type: str
    title: str
    content_hash: str
    size: int
    mtime: float
    category: str
    status: str | None
    created: str | None
    updated: str | None
    doc_date: str | None
    date_source: str | None
    aliases: str
    text: str
    indexed_at: float
    chunks: tuple[PortableChunk, ...]
    tags: tuple[str, ...]
    links: tuple[PortableLink, ...]
    names: tuple[PortableName, ...]


@dataclass(frozen=True)
class PortableVector:
    model: str
    embed_hash: str
    dim: int
    vector: bytes  # float32, native little-endian, `dim` of them


# -- reading --------------------------------------------------------------------------------


def meta_rows(conn: Connection) -> list[tuple[str, str | None]]:
    """Every `meta` row that describes the index (not LOCAL_META), by key."""
    rows = conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
    return [(k, v) for k, v in rows if k not in LOCAL_META]


def iter_documents(conn: Connection) -> Iterator[PortableDocument]:
    """Every document, by path, each read whole (one at a time: the texts of a large index
    never sit in memory together). From a team store: this workspace's documents (and those
    from before workspaces), never another member's transcript (store/scope.py)."""
    mine, mine_params = scope.own(conn)
    visible, visible_params = scope.visible(conn, "documents")
    legacy = " OR workspace = ?" if scope.scope_of(conn) else ""
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM documents WHERE ({mine}{legacy}) AND {visible} ORDER BY path",
            (*mine_params, *([scope.LEGACY] if legacy else []), *visible_params),
        ).fetchall()
    ]
    columns = ", ".join(DOCUMENT_COLUMNS)
    for doc_id in ids:
        row = conn.execute(f"SELECT {columns} FROM documents WHERE id = ?", (doc_id,)).fetchone()
        if row is None:
            continue  # not in a snapshot: a writer deleted it meanwhile
        chunks = conn.execute(
            f"SELECT {', '.join(CHUNK_COLUMNS)} FROM chunks WHERE document_id = ? "
            "ORDER BY chunk_index, id",
            (doc_id,),
        ).fetchall()
        tags = conn.execute("SELECT tag FROM tags WHERE document_id = ? ORDER BY tag", (doc_id,))
        links = conn.execute(
            "SELECT target, link_type, target_key FROM links WHERE document_id = ? "
            "ORDER BY target, link_type, target_key",
            (doc_id,),
        ).fetchall()
        names = conn.execute(
            "SELECT name, kind FROM names WHERE document_id = ? ORDER BY name, kind", (doc_id,)
        ).fetchall()
        values = dict(zip(DOCUMENT_COLUMNS, row, strict=True))
        yield PortableDocument(
            **values,
            chunks=tuple(PortableChunk(*c) for c in chunks),
            tags=tuple(t for (t,) in tags),
            links=tuple(PortableLink(*link) for link in links),
            names=tuple(PortableName(*n) for n in names),
        )


def iter_vectors(conn: Connection, batch: int = 1000) -> Iterator[PortableVector]:
    """Every stored vector, by (model, hash), read `batch` at a time. On PostgreSQL a
    pgvector column is read as real[] (float4: exactly the float32 that was stored)."""
    import numpy as np

    column = store_of(conn).vectors.exported_column(conn)
    last: tuple[str, str] | None = None
    while True:
        where, params = ("WHERE (model, embed_hash) > (?, ?)", last) if last else ("", ())
        rows = conn.execute(
            f"SELECT model, embed_hash, dim, {column} FROM embeddings {where} "
            "ORDER BY model, embed_hash LIMIT ?",
            (*params, batch),
        ).fetchall()
        for model, embed_hash, dim, value in rows:
            data = (
                np.asarray(value, dtype="<f4").tobytes()
                if isinstance(value, list)
                else bytes(value)
            )
            yield PortableVector(model, embed_hash, int(dim), data)
        if len(rows) < batch:
            return
        last = (rows[-1][0], rows[-1][1])


def is_empty(conn: Connection) -> bool:
    """No document and no vector; in a team store, no document of this workspace (the
    vectors there are the team's)."""
    if scope.scope_of(conn) is not None:
        return not documents.has_any(conn)
    return (
        not documents.has_any(conn)
        and conn.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone() is None
    )


def counts(conn: Connection) -> tuple[int, int, int]:
    """(documents, chunks, vectors); in a team store, documents and chunks of this workspace."""
    mine, params = scope.own(conn)
    row = conn.execute(
        f"SELECT (SELECT COUNT(*) FROM documents WHERE {mine}), "
        "(SELECT COUNT(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
        f"WHERE {scope.own(conn, 'd')[0]}), (SELECT COUNT(*) FROM embeddings)",
        (*params, *params),
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


# -- writing (inside the caller's transaction) ----------------------------------------------


def clear(conn: Connection) -> int:
    """Remove every document (with its chunks, keyword rows, tags, links and names), every
    vector and the index's meta rows; returns the number of documents removed. In a team
    store only this workspace's documents: the others' and the shared vectors stay (the
    vectors no document uses any more are dropped by the next index run)."""
    if scope.scope_of(conn) is not None:
        ids = [stored.id for stored in documents.stored_files(conn).values()]
        for doc_id in ids:
            documents.delete_document(conn, doc_id)
        return len(ids)
    ids = documents.document_ids(conn)
    for doc_id in ids:
        documents.delete_document(conn, doc_id)
    conn.execute("DELETE FROM embeddings")
    for key, _ in meta_rows(conn):
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
    return len(ids)


def write_meta(conn: Connection, rows: Sequence[tuple[str, str | None]]) -> None:
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [(k, v) for k, v in rows if k not in LOCAL_META],
    )


def write_document(conn: Connection, doc: PortableDocument) -> list[int]:
    """Insert a document under a new id with its chunks, tags, links and names; returns its
    chunks' new ids in the order of `doc.chunks`. Its keyword rows are the caller's
    (write_keywords)."""
    values = [getattr(doc, c) for c in DOCUMENT_COLUMNS]
    columns = list(DOCUMENT_COLUMNS)
    team = scope.writing(conn)
    if team is not None:  # the importer's, as if its own index run had written them
        columns += ["workspace", "owner", "shared"]
        values += [team.workspace, team.member, team.share and doc.type == "session"]
    (doc_id,) = conn.execute(
        f"INSERT INTO documents({', '.join(columns)}) "
        f"VALUES ({', '.join('?' * len(columns))}) RETURNING id",
        values,
    ).fetchone()
    chunk_ids: list[int] = []
    for start in range(0, len(doc.chunks), CHUNK_BATCH):
        chunk_ids += _insert_chunks(conn, doc_id, doc.chunks[start : start + CHUNK_BATCH])
    conn.executemany(
        "INSERT INTO tags(document_id, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(doc_id, t) for t in doc.tags],
    )
    conn.executemany(
        "INSERT INTO links(document_id, target, link_type, target_key) VALUES (?, ?, ?, ?)",
        [(doc_id, link.target, link.link_type, link.target_key) for link in doc.links],
    )
    conn.executemany(
        "INSERT INTO names(document_id, name, kind) VALUES (?, ?, ?)",
        [(doc_id, n.name, n.kind) for n in doc.names],
    )
    return chunk_ids


CHUNK_BATCH = 500  # chunks per INSERT: 8 values each, well below SQLite's 32,766 variables
_INSERT_CHUNK = f"INSERT INTO chunks(document_id, {', '.join(CHUNK_COLUMNS)}) VALUES "
_CHUNK_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?)"


def _insert_chunks(conn: Connection, doc_id: int, batch: Sequence[PortableChunk]) -> list[int]:
    """Insert `batch` in one statement (one round trip to a server, not one per chunk); their
    new ids in the order of `batch`. RETURNING gives rows in no promised order, so they are
    matched by chunk_index; a document whose indexes repeat is written a row at a time."""

    def values(c: PortableChunk) -> tuple[object, ...]:
        return (
            doc_id,
            c.chunk_index,
            c.section,
            c.page,
            c.line,
            c.chunk_date,
            c.text,
            c.embed_hash,
        )

    indexes = [c.chunk_index for c in batch]
    if len(set(indexes)) != len(indexes):
        return [
            int(
                conn.execute(_INSERT_CHUNK + _CHUNK_VALUES + " RETURNING id", values(c)).fetchone()[
                    0
                ]
            )
            for c in batch
        ]
    rows = conn.execute(
        _INSERT_CHUNK + ", ".join([_CHUNK_VALUES] * len(batch)) + " RETURNING id, chunk_index",
        [v for c in batch for v in values(c)],
    ).fetchall()
    ids = {int(index): int(chunk_id) for chunk_id, index in rows}
    return [ids[i] for i in indexes]


def write_keywords(conn: Connection, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Keyword rows (chunk id, title, section, body, tags), tokenized by the caller."""
    keywords.insert(conn, rows)


def write_vectors(conn: Connection, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
    """Vectors of one model, (hash, float32 array), through the store's own writer (pgvector
    and its HNSW index on PostgreSQL)."""
    from . import vectors

    vectors.store(conn, model, items)


def aliases_json(aliases: Sequence[str]) -> str:
    return json.dumps(list(aliases), ensure_ascii=False)
