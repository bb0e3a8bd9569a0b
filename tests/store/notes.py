"""Writing notes into a real temp index for the tests of store/ read functions: the store's
own write_document, with the rows the indexing pipeline would give it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from tsm.embed import Embedder
from tsm.models import Chunk, Document, Link, Section
from tsm.store import migrations, vectors
from tsm.store.connect import Connection, Transaction
from tsm.store.documents import ChunkRow, write_document
from tsm.store.engine import store_of


def add_note(
    conn: sqlite3.Connection,
    path: str,
    bodies: Sequence[str],
    *,
    title: str | None = None,
    aliases: Sequence[str] = (),
    tags: Sequence[str] = (),
    links: Sequence[Link] = (),
    embed_hashes: Sequence[str] | None = None,
) -> int:
    """One document with a chunk per body (chunk_index 0, 1 …), each on a line of its own
    (bodies of one line: chunk i starts on line i + 1); its id. Chunk i's text hash is
    `embed_hashes[i]` (two chunks with one hash: the same text), else its own."""
    doc = Document(
        path=path,
        type="markdown",
        title=path if title is None else title,
        text="\n".join(bodies),
        sections=tuple(Section("", b) for b in bodies),
        tags=tuple(tags),
        links=tuple(links),
        aliases=tuple(aliases),
    )
    rows = [
        ChunkRow(
            Chunk(i, "", b, line=i + 1),
            fts_title="",
            fts_section="",
            fts_body=b,
            embed_hash=f"{path}-{i}" if embed_hashes is None else embed_hashes[i],
        )
        for i, b in enumerate(bodies)
    ]
    with Transaction(conn):
        return write_document(
            conn,
            doc,
            rows,
            content_hash=path,
            size=1,
            mtime=0.0,
            category="note",
            fts_tags=" ".join(tags),
        )


def store_vectors(
    conn: Connection, embedder: Embedder, batch: Sequence[vectors.PendingChunk]
) -> None:
    """Embed `batch` (vectors.pending's) and store its vectors; call inside a transaction."""
    matrix = embedder.embed_documents([p.text for p in batch])
    vectors.store(conn, embedder.name, zip([p.embed_hash for p in batch], matrix, strict=True))


def insert_vectors(conn: Connection, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
    """Vectors inserted as a tsm of before schema 12 stored them (no released hashes); for
    stores left at an older schema. Call inside a transaction."""
    rows = store_of(conn).vectors.storable_rows(conn, model, items)
    conn.executemany(
        "INSERT INTO embeddings(model, embed_hash, dim, vector) VALUES (?, ?, ?, ?)", rows
    )


def embed_pending(conn: Connection, embedder: Embedder, limit: int | None = None) -> int:
    """Embed and store up to `limit` texts that lack a vector, in one transaction; how many."""
    batch = vectors.pending(conn, embedder.name, limit)
    with Transaction(conn):
        store_vectors(conn, embedder, batch)
    return len(batch)


def chunk_ids(conn: sqlite3.Connection, doc_id: int) -> list[int]:
    """A document's chunk ids in chunk order."""
    rows = conn.execute(
        "SELECT id FROM chunks WHERE document_id = ? ORDER BY chunk_index", (doc_id,)
    )
    return [r[0] for r in rows]


def pg_connect(url: str, up_to: int | None = None) -> Any:
    """A connection to the PostgreSQL store at `url`, migrated to `up_to` (default: all)."""
    from tsm.store.postgres import connection as postgres

    conn = postgres.connect(url)
    migrations.apply(conn, up_to=up_to)
    return conn
