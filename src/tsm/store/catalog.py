"""What the index holds, read back for people: the SQL of `tsm list`, `tags`, `info`, `get`
and the index part of `status`, and the lookup of a document by id or path. It lives here so
that SQL stays in store/ and every row comes back named: each dataclass has the
fields of its public JSON in the JSON's order, so `as_json()` (or `dataclasses.asdict`) is
the contract of docs/skill-interface.md as it was."""

from __future__ import annotations

import datetime as dt
import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import DocumentNotFound
from ..workspace import typed_path
from . import chunks, migrations, scope, vectors
from .connect import Connection
from .engine import store_of
from .names import stored_aliases

if TYPE_CHECKING:
    from ..config import Settings


class Row:
    """A named row. Sequences are tuples (the rows are frozen): `as_json()` gives lists,
    which the human renderer (render/human_format.py) joins and `asdict` would not."""

    def as_json(self) -> dict[str, Any]:
        """The row as its JSON object: the same keys, order and values as `asdict`, with
        every tuple turned into a list."""
        plain = _plain(self)
        assert isinstance(plain, dict)
        return plain


@dataclass(frozen=True)
class DocumentSummary(Row):
    """One document in `tsm list`."""

    id: int
    title: str
    type: str
    tags: tuple[str, ...]
    chunk_count: int
    created_at: str  # when it was indexed, ISO 8601 in UTC (skill-interface.md's name)
    path: str
    category: str
    status: str | None
    date: str | None


@dataclass(frozen=True)
class TagCount(Row):
    """One tag in `tsm tags`, with the number of documents carrying it."""

    name: str
    count: int


@dataclass(frozen=True)
class DocumentLink(Row):
    """A link written in a document, as written (not resolved)."""

    target: str
    link_type: str


@dataclass(frozen=True)
class DocumentInfo(Row):
    """`tsm info`: a document's metadata, sections and outgoing links."""

    id: int
    path: str
    type: str
    title: str
    category: str
    status: str | None
    created: str | None
    updated: str | None
    date: str | None
    date_source: str | None
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    size: int
    content_hash: str
    indexed_at: str  # ISO 8601 in UTC
    chunk_count: int
    sections: tuple[str, ...]
    links: tuple[DocumentLink, ...]


@dataclass(frozen=True)
class DocumentText(DocumentInfo):
    """`tsm get`: the metadata of `tsm info` followed by the whole stored text."""

    text: str


@dataclass(frozen=True)
class StoredDocument:
    """A row of the documents table, every column (the text too)."""

    id: int
    path: str
    type: str
    title: str
    category: str
    status: str | None
    created: str | None
    updated: str | None
    doc_date: str | None
    date_source: str | None
    aliases: tuple[str, ...]
    size: int
    mtime: float
    content_hash: str
    indexed_at: float  # seconds since the epoch
    text: str


@dataclass(frozen=True)
class IndexStatus(Row):
    """The index's part of `tsm status`. The daemon, the client and the MCP server add their
    own sections after these keys: `as_json(extra)`."""

    documents: Mapping[str, int]  # document count by type, types in order
    total_documents: int
    total_chunks: int
    db_size_bytes: int  # the DB file and its WAL
    model_name: str | None  # the model the stored vectors come from
    embedding_dim: int | None
    schema_version: int
    chunks_without_vectors: int
    vectors_done: int
    vectors_total: int
    embed_rate: float | None  # chunks/s of the last embedding run (None before the first)
    embed_rate_at: str | None  # when that run ended
    configured_model: str
    vectors_stale: bool  # the stored vectors come from another model than the configured one
    index_root: str
    db_path: str
    trusted: bool
    warnings: tuple[str, ...]
    # Added to the contract (additive): which store holds the index. On PostgreSQL `db_path` is the
    # server's URL without its password and `db_size_bytes` is pg_database_size.
    store: str = "sqlite"  # "sqlite" or "postgresql"
    store_url: str | None = None  # the server's URL without its password; None for SQLite
    server_version: str | None = None  # PostgreSQL's server_version
    pgvector_version: str | None = None  # the vector extension's version in the database

    def as_json(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The status JSON: these keys in order, then those of `extra` (daemon, embedder,
        watcher, queue, server …)."""
        return super().as_json() | dict(extra or {})


# -- documents ------------------------------------------------------------------------------

# The documents table's columns, named as StoredDocument's fields.
_COLUMNS = ", ".join(f.name for f in fields(StoredDocument))


def list_documents(conn: Connection, type_: str | None = None) -> list[DocumentSummary]:
    """Every document (or those of one type), by path."""
    sql = """SELECT d.id, d.title, d.type, d.path, d.category, d.status, d.doc_date,
                    d.indexed_at, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id)
             FROM documents d"""
    visible, params = scope.visible(conn)
    sql += f" WHERE {visible}"
    if type_:
        sql += " AND d.type = ?"
        params.append(type_)
    rows = conn.execute(sql + " ORDER BY d.path", params).fetchall()
    tags = _tags_by_document(conn)
    out = []
    for row in rows:
        doc_id, title, doc_type, path, category, status, doc_date, indexed_at, chunk_count = row
        out.append(
            DocumentSummary(
                id=doc_id,
                title=title,
                type=doc_type,
                tags=tags.get(doc_id, ()),
                chunk_count=chunk_count,
                created_at=_utc(indexed_at),
                path=path,
                category=category,
                status=status,
                date=doc_date,
            )
        )
    return out


def tag_counts(conn: Connection) -> list[TagCount]:
    """Every tag with its number of documents, most used first, then by name."""
    visible, params = scope.visible(conn)
    rows = conn.execute(
        f"""SELECT t.tag, COUNT(*) FROM tags t JOIN documents d ON d.id = t.document_id
            WHERE {visible} GROUP BY t.tag ORDER BY COUNT(*) DESC, t.tag""",
        params,
    )
    return [TagCount(tag, count) for tag, count in rows]


def find_document(conn: Connection, ref: str, *, index_root: Path, cwd: Path) -> StoredDocument:
    """A document by id; else by path as the user typed it (workspace.typed_path: from
    `cwd`, or from the root when that leads outside it), else as tsm prints it (from the root);
    DocumentNotFound (with the closest paths as a hint) otherwise."""
    row = None
    visible, visible_params = scope.visible(conn, "documents")
    first, first_params = scope.own_first(conn)
    if is_document_id(ref):
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM documents WHERE id = ? AND {visible}",
            (int(ref), *visible_params),
        ).fetchone()
    if row is None:
        candidates = []
        try:
            candidates.append(typed_path(ref, cwd, index_root))
        except (ValueError, OSError):
            pass
        # lstrip("./") drops every leading "." and "/", not only one "./"
        candidates.append(ref.lstrip("./") if ref.startswith("./") else ref)
        for candidate in candidates:
            if not _bindable(candidate):  # an undecodable name is never stored
                continue
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM documents WHERE path = ? AND {visible}{first} LIMIT 1",
                (candidate, *visible_params, *first_params),
            ).fetchone()
            if row:
                break
    if row is None:
        known = [
            path
            for (path,) in conn.execute(
                f"SELECT path FROM documents WHERE {visible}", visible_params
            )
        ]
        close = difflib.get_close_matches(ref.removeprefix("./"), known, n=3, cutoff=0.6)
        hint = ("did you mean: " + ", ".join(close)) if close else "see `tsm list`"
        raise DocumentNotFound(f"no indexed document {ref!r}", hint)
    columns = dict(zip(_field_names(StoredDocument), row, strict=True))
    columns["aliases"] = stored_aliases(columns["aliases"], columns["path"])
    return StoredDocument(**columns)


def document_info(conn: Connection, ref: str, *, index_root: Path, cwd: Path) -> DocumentInfo:
    """`tsm info`: the document `ref` names (find_document) with its sections and links."""
    doc = find_document(conn, ref, index_root=index_root, cwd=cwd)
    return DocumentInfo(**_info_fields(conn, doc))


def document_text(conn: Connection, ref: str, *, index_root: Path, cwd: Path) -> DocumentText:
    """`tsm get`: what `tsm info` says, and the whole stored text."""
    doc = find_document(conn, ref, index_root=index_root, cwd=cwd)
    return DocumentText(**_info_fields(conn, doc), text=doc.text)


def is_document_id(ref: str) -> bool:
    """ASCII digits that fit SQLite's 64-bit integer ("²" and 10**30 are paths, not ids)."""
    return ref.isascii() and ref.isdigit() and len(ref) <= 19 and int(ref) < 2**63


def _bindable(text: str) -> bool:
    """Valid Unicode, so SQLite can take it: a name undecodable in the file system arrives
    with surrogate escapes, and sources/files.storable() kept it out of the index (store/ may
    not import sources/: pyproject's import-linter layers)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _info_fields(conn: Connection, doc: StoredDocument) -> dict[str, Any]:
    sections = conn.execute(
        "SELECT section FROM chunks WHERE document_id = ? GROUP BY section "
        "ORDER BY MIN(chunk_index)",
        (doc.id,),
    )
    links = conn.execute("SELECT target, link_type FROM links WHERE document_id = ?", (doc.id,))
    (chunk_count,) = conn.execute(
        "SELECT COUNT(*) FROM chunks WHERE document_id = ?", (doc.id,)
    ).fetchone()
    return {
        "id": doc.id,
        "path": doc.path,
        "type": doc.type,
        "title": doc.title,
        "category": doc.category,
        "status": doc.status,
        "created": doc.created,
        "updated": doc.updated,
        "date": doc.doc_date,
        "date_source": doc.date_source,
        "aliases": doc.aliases,
        "tags": document_tags(conn, doc.id),
        "size": doc.size,
        "content_hash": doc.content_hash,
        "indexed_at": _utc(doc.indexed_at),
        "chunk_count": chunk_count,
        "sections": tuple(section for (section,) in sections),
        "links": tuple(DocumentLink(target, kind) for target, kind in links),
    }


def document_tags(conn: Connection, doc_id: int) -> tuple[str, ...]:
    """One document's tags, by name."""
    rows = conn.execute("SELECT tag FROM tags WHERE document_id = ? ORDER BY tag", (doc_id,))
    return tuple(tag for (tag,) in rows)


def _tags_by_document(conn: Connection) -> dict[int, tuple[str, ...]]:
    """Every document's tags, by name, in one query (not one per listed document)."""
    out: dict[int, list[str]] = {}
    for doc_id, tag in conn.execute("SELECT document_id, tag FROM tags ORDER BY document_id, tag"):
        out.setdefault(doc_id, []).append(tag)
    return {doc_id: tuple(tags) for doc_id, tags in out.items()}


# -- status ---------------------------------------------------------------------------------


def index_status(
    conn: Connection, settings: Settings, *, configured_vectors: str | None
) -> IndexStatus:
    """The index's part of `tsm status`. `configured_vectors`: the model name the configured
    embedder writes on its vectors, when known without loading it (core/knowledge.py's
    model_name_of); None when unknown, which never counts as stale."""
    by_type = {
        doc_type: count
        for doc_type, count in conn.execute(
            "SELECT type, COUNT(*) FROM documents GROUP BY type ORDER BY type"
        )
    }
    model = vectors.get_meta(conn, "model_name")
    dim = vectors.get_meta(conn, "embedding_dim")
    configured = settings.embedder
    total_chunks = chunks.count(conn)
    missing = vectors.count_missing(conn, model)
    server = store_info(conn, settings)
    return IndexStatus(
        documents=by_type,
        total_documents=sum(by_type.values()),
        total_chunks=total_chunks,
        db_size_bytes=server.size_bytes,
        model_name=model,
        embedding_dim=int(dim) if dim else None,
        schema_version=migrations.schema_version(conn),
        chunks_without_vectors=missing,
        vectors_done=total_chunks - missing,
        vectors_total=total_chunks,
        embed_rate=_float_or_none(vectors.get_meta(conn, "embed_rate")),
        embed_rate_at=vectors.get_meta(conn, "embed_rate_at"),
        configured_model=configured,
        vectors_stale=bool(
            model and configured not in ("none", "") and configured_vectors not in (None, model)
        ),
        index_root=str(settings.index_root),
        db_path=settings.store_key,
        trusted=settings.trusted,
        warnings=tuple(w for w in (settings.trust_warning,) if w),
        store=server.store,
        store_url=server.url,
        server_version=server.server_version,
        pgvector_version=server.pgvector_version,
    )


@dataclass(frozen=True)
class StoreInfo:
    """Which store holds the index, and what `status` and `doctor` say of it."""

    store: str  # "sqlite" or "postgresql"
    url: str | None  # the server's URL without its password; None for SQLite
    server_version: str | None
    pgvector_version: str | None  # None: no vector extension in the database
    size_bytes: int  # the DB file and its WAL; pg_database_size on PostgreSQL


def store_info(conn: Connection, settings: Settings) -> StoreInfo:
    store = store_of(conn)
    return StoreInfo(store.name, *store.catalog.server_info(conn, settings))


# -- health (`tsm doctor`) -------------------------------------------------------------------


@dataclass(frozen=True)
class IndexHealth:
    """What `tsm doctor` reads of the DB itself."""

    quick_check: tuple[str, ...]  # the lines of PRAGMA quick_check: ("ok",) for a sound file
    schema_version: int
    documents: int
    chunks: int
    chunks_without_keywords: int = 0  # chunks a keyword search cannot find
    orphan_keywords: int = 0  # keyword rows of chunks that no longer exist
    orphan_vectors: int = 0  # vectors of texts no chunk has any more
    # PostgreSQL only (empty on SQLite, whose file quick_check covers):
    indexes: int = 0  # the indexes of the store's tables (btree, HNSW)
    invalid_indexes: tuple[str, ...] = ()  # those pg_index calls not valid or not ready
    missing_hnsw: tuple[str, ...] = ()  # "model (dim)" with HNSW_MIN_ROWS vectors, no HNSW index

    @property
    def sound(self) -> bool:
        return self.quick_check == ("ok",)


def index_health(conn: Connection) -> IndexHealth:
    """SQLite's quick check (seconds on a large index), or on PostgreSQL the validity of
    every index of the store's tables; then the schema version, the counts, the keyword
    rows' coverage and the rows left without their chunk. sqlite3.DatabaseError when the
    file cannot be read that far."""
    store = store_of(conn)
    lines = store.catalog.quick_check(conn)
    version = migrations.schema_version(conn)
    documents, chunks = conn.execute(
        "SELECT (SELECT COUNT(*) FROM documents), (SELECT COUNT(*) FROM chunks)"
    ).fetchone()
    table, key = store.catalog.keyword_table
    unkeyed, orphan_keys, orphan_vectors = conn.execute(
        f"""SELECT
              (SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (
                   SELECT 1 FROM {table} k WHERE k.{key} = c.id)),
              (SELECT COUNT(*) FROM {table} k WHERE NOT EXISTS (
                   SELECT 1 FROM chunks c WHERE c.id = k.{key})),
              (SELECT COUNT(*) FROM embeddings e WHERE NOT EXISTS (
                   SELECT 1 FROM chunks c WHERE c.embed_hash = e.embed_hash))"""
    ).fetchone()
    indexes, invalid, missing = store.catalog.index_report(conn)
    return IndexHealth(
        lines,
        version,
        int(documents),
        int(chunks),
        int(unkeyed),
        int(orphan_keys),
        int(orphan_vectors),
        indexes=indexes,
        invalid_indexes=invalid,
        missing_hnsw=missing,
    )


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _utc(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat()


def _plain(value: Any) -> Any:
    """JSON-native: dataclasses to dicts (fields in order), tuples to lists."""
    if value is None or isinstance(value, str | int | float):
        return value  # most values: first, since `tsm list` converts one per column and row
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return {name: _plain(getattr(value, name)) for name in _field_names(type(value))}
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))
