"""Writing documents in SQLite: `BEGIN IMMEDIATE` lets one writer in at a time, so writers
take no locks of their own; FTS5 rows have no cascade, so they are removed by hand."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from . import keywords

if TYPE_CHECKING:
    from ..connect import Connection
    from ..protocol import ChunkValues, DocumentContents


def lock_paths(conn: Connection, paths: Sequence[str]) -> None:
    """Nothing to take: write transactions are serial already."""


def exclude_writers(conn: Connection) -> None:
    """Nothing to wait for: write transactions are serial already."""


def lock_twin(conn: Connection, path: str) -> bool:
    return True


def remove_path(conn: Connection, path: str) -> None:
    old = conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
    if old:
        keywords.delete_document(conn, old[0])
        conn.execute("DELETE FROM documents WHERE id = ?", (old[0],))


_CHUNK_COLUMNS = "document_id, chunk_index, section, page, line, chunk_date, text, embed_hash"


def insert_chunks(conn: Connection, values: Sequence[ChunkValues]) -> list[int]:
    """A statement per chunk: SQLite has no round trips to save."""
    sql = f"INSERT INTO chunks({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
    return [int(conn.execute(sql, v).fetchone()[0]) for v in values]


def insert_document(
    conn: Connection, columns: Sequence[str], values: Sequence[object], contents: DocumentContents
) -> Callable[[], int]:
    """A statement per row: SQLite has no round trips to save, and FTS5 wants chunk ids."""
    marks = ", ".join(["?"] * len(values))
    doc_id = int(
        conn.execute(
            f"INSERT INTO documents({', '.join(columns)}) VALUES ({marks}) RETURNING id", values
        ).fetchone()[0]
    )
    chunk_ids = insert_chunks(conn, [(doc_id, *chunk) for chunk in contents.chunks])
    keywords.insert(
        conn, [(chunk_id, *row) for chunk_id, row in zip(chunk_ids, contents.keywords, strict=True)]
    )
    conn.executemany(
        "INSERT INTO tags(document_id, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(doc_id, tag) for tag in contents.tags],
    )
    conn.executemany(
        "INSERT INTO links(document_id, target, link_type, target_key) VALUES (?, ?, ?, ?)",
        [(doc_id, *link) for link in contents.links],
    )
    conn.executemany(
        "INSERT INTO names(document_id, name, kind) VALUES (?, ?, ?)",
        [(doc_id, *name) for name in contents.names],
    )
    return lambda: doc_id
