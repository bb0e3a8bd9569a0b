"""`tsm export` and `tsm import`: an index moved between stores (SQLite and PostgreSQL) as one
portable file, nothing re-read from the notes and nothing re-embedded.

The file is gzip-compressed JSON Lines (an uncompressed one imports too): a header, then one
record per line, then an end record with the counts, so that a truncated file is told from a
whole one.

    {"format": "tsm-export", "format_version": 1, "schema_version": 3, "store": "sqlite", …}
    {"kind": "meta", "key": "model_name", "value": "…"}
    {"kind": "document", "path": "notes/a.md", …, "aliases": [], "text": "…",
     "chunks": [{"chunk_index": 0, "section": "…", …}], "tags": […],
     "links": [{"target": …, "link_type": …, "target_key": …}], "names": [{"name", "kind"}]}
    {"kind": "vector", "model": "…", "embed_hash": "…", "dim": 384, "vector": "<base64>"}
    {"kind": "end", "meta": 4, "documents": 40, "chunks": 260, "vectors": 255}

Ids are not in it (a document is its path, a vector its model and text hash): the importing
store gives new ones. Keyword rows are not either: the import rebuilds them from the stored
text with the target's tokenizer and user dictionary, as `tsm reindex fts` does, so the same
file is right for SQLite's keyword index and PostgreSQL's. Vectors travel as their float32
bytes (base64).

An import is one transaction: a file that turns out truncated, of another version or not an
export at all is refused with one line (exit 1) and the store is as it was.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import errno
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..config import Settings
from ..errors import StorageFailure, TsmError, UserError
from ..statedir import note_file, private_dir
from ..store import portable
from ..store.connect import Connection, Transaction, engine_name, open_store, pipelined
from ..store.documents import KeywordSource

FORMAT = "tsm-export"
FORMAT_VERSION = 1
MAX_INT = 2**63 - 1
VECTOR_BATCH = 500
# The longest record read: a document with its text and its chunks' (twice the text) fits
# many times over (files are read up to index.max_file_mb, 10 MB by default).
MAX_RECORD_CHARS = 128 * 2**20
KEYWORD_BATCH = 1000  # keyword rows written in one call (many documents' chunks)


@dataclass(frozen=True)
class ExportReport:
    """What `tsm export` wrote."""

    file: str
    store: str  # "sqlite" or "postgresql": where the index came from
    source: str  # the DB file or the server's URL (without its password)
    format_version: int
    schema_version: int
    documents: int
    chunks: int
    vectors: int
    meta: int
    bytes: int


@dataclass(frozen=True)
class ImportReport:
    """What `tsm import` loaded."""

    file: str
    store: str  # "sqlite" or "postgresql": where the index went
    target: str  # the DB file or the server's URL (without its password)
    replaced_documents: int  # documents the store held before (--replace)
    documents: int
    chunks: int
    vectors: int
    meta: int
    keyword_rows: int
    source_store: str  # the store the file was exported from
    schema_version: int  # the file's
    # documents not loaded, each {"path", "reason"}: over the size indexing reads
    skipped: list[dict[str, str]] = field(default_factory=list)


def store_name(conn: Connection) -> str:
    return engine_name(conn)


# -- export ---------------------------------------------------------------------------------


def export_index(settings: Settings, file: Path) -> ExportReport:
    """Write the configured store's index to `file` (replaced whole only once the export is
    complete; 0600: it holds the notes' text)."""
    from .. import __version__
    from ..store import migrations
    from ..store.connect import read_snapshot

    conn = open_store(settings)
    store = store_name(conn)
    import tempfile

    try:
        # A fresh name of its own (O_EXCL, 0600): at `.<name>.<pid>.tmp`, opened with O_TRUNC,
        # a link planted under that name (a repository can ship them for a range of pids)
        # had the export written into the file it points at.
        fd, tmp_name = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
        tmp = Path(tmp_name)
    except OSError as exc:
        conn.close()
        raise _file_error(exc, file) from None
    counts = {"meta": 0, "documents": 0, "chunks": 0, "vectors": 0}
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz,
            read_snapshot(conn),
        ):
            out = io.TextIOWrapper(gz, encoding="utf-8", newline="\n")
            version = migrations.schema_version(conn)
            _write(
                out,
                {
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "schema_version": version,
                    "store": store,
                    "tsm_version": __version__,
                    "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                },
            )
            for key, value in portable.meta_rows(conn):
                _write(out, {"kind": "meta", "key": key, "value": value})
                counts["meta"] += 1
            for doc in portable.iter_documents(conn):
                _write(out, _document_record(doc))
                counts["documents"] += 1
                counts["chunks"] += len(doc.chunks)
            for vec in portable.iter_vectors(conn):
                _write(
                    out,
                    {
                        "kind": "vector",
                        "model": vec.model,
                        "embed_hash": vec.embed_hash,
                        "dim": vec.dim,
                        "vector": base64.b64encode(vec.vector).decode("ascii"),
                    },
                )
                counts["vectors"] += 1
            _write(out, {"kind": "end", **counts})
            out.flush()
            out.detach()
            gz.close()
            os.fsync(raw.fileno())  # on disk before it takes the name
        os.replace(tmp, file)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _file_error(exc, file) from None
        raise
    finally:
        conn.close()
    return ExportReport(
        file=str(file),
        store=store,
        source=settings.store_key,
        format_version=FORMAT_VERSION,
        schema_version=version,
        documents=counts["documents"],
        chunks=counts["chunks"],
        vectors=counts["vectors"],
        meta=counts["meta"],
        bytes=file.stat().st_size,
    )


def _file_error(exc: OSError, file: Path) -> TsmError:
    """The export file could not be written: the user's to fix (a folder that does not exist,
    no permission), unless the disk is full or failing (a system error, exit 2)."""
    message = f"cannot write {file}: {exc.strerror or exc}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        return StorageFailure(message, "free some space, or export to another disk")
    return UserError(message)


def _write(out: IO[str], record: Mapping[str, Any]) -> None:
    out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


def _document_record(doc: portable.PortableDocument) -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "document"}
    for column in portable.DOCUMENT_COLUMNS:
        record[column] = getattr(doc, column)
    record["aliases"] = json.loads(doc.aliases or "[]")
    record["chunks"] = [
        {name: getattr(c, name) for name in portable.CHUNK_COLUMNS} for c in doc.chunks
    ]
    record["tags"] = list(doc.tags)
    record["links"] = [
        {"target": x.target, "link_type": x.link_type, "target_key": x.target_key}
        for x in doc.links
    ]
    record["names"] = [{"name": n.name, "kind": n.kind} for n in doc.names]
    return record


# -- import ---------------------------------------------------------------------------------


def import_index(settings: Settings, file: Path, *, replace: bool = False) -> ImportReport:
    """Load the export `file` into the configured store, in one transaction. A store that
    already holds documents or vectors is refused unless `replace` (its index is then
    replaced whole, in the same transaction)."""
    reader = _Reader(file)  # the header is read and checked before the store is touched
    new_file = not settings.store_url and not os.path.lexists(settings.db_path)
    try:
        if not settings.store_url:
            private_dir(settings.state_dir)  # as `tsm index` makes it: 0700, no symlink
        conn = open_store(settings, create=True)
        try:
            return _load(settings, conn, reader, replace)
        except BaseException:
            if new_file:  # made for this import, which failed: leave no empty index behind
                conn.close()
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{settings.db_path}{suffix}").unlink(missing_ok=True)
            raise
        finally:
            conn.close()
    finally:
        reader.close()


def _load(settings: Settings, conn: Connection, reader: _Reader, replace: bool) -> ImportReport:
    from ..text.tokenizer import compiled_user_dict, get_tokenizer
    from . import imported, reindex

    tokenizer = get_tokenizer(compiled_user_dict(settings.state_dir))
    counts = {"meta": 0, "documents": 0, "chunks": 0, "vectors": 0}  # as the file holds them
    loaded = {"documents": 0, "chunks": 0}  # as stored: within indexing's bounds
    skipped: list[dict[str, str]] = []
    keyword_rows = 0
    keywords: list[tuple[int, str, str, str, str]] = []
    replaced = 0
    paths: set[str] = set()
    pending: dict[str, list[tuple[str, Any]]] = {}
    end: dict[str, Any] | None = None

    def flush(model: str) -> None:
        items = pending.pop(model, [])
        if items:
            portable.write_vectors(conn, model, items)

    with pipelined(conn), Transaction(conn):  # a round trip per document, not per row
        if not portable.is_empty(conn):
            if not replace:
                docs, chunks, vecs = portable.counts(conn)
                raise UserError(
                    f"the store at {settings.store_key} already holds an index "
                    f"({docs} documents, {chunks} chunks, {vecs} vectors)",
                    "import into an empty store, or add --replace to replace its index",
                )
            replaced = portable.clear(conn)
        for record in reader.records():
            kind = record["kind"]
            if kind == "end":
                end = record
                continue
            if end is not None:
                raise reader.error("a record after the end record")
            if kind == "meta":
                portable.write_meta(conn, [(record["key"], record["value"])])
                counts["meta"] += 1
            elif kind == "document":
                doc = _document(record, reader)
                if doc.path in paths:
                    raise reader.error(f"document {doc.path!r} appears twice")
                paths.add(doc.path)
                counts["documents"] += 1
                counts["chunks"] += len(doc.chunks)
                try:
                    doc = imported.bounded(settings, doc)
                except imported.TooLarge as exc:
                    skipped.append({"path": doc.path, "reason": str(exc)})
                    continue
                chunk_ids = portable.write_document(conn, doc)
                source = KeywordSource(
                    doc.title,
                    tuple(json.loads(doc.aliases)),
                    doc.tags,
                    tuple(
                        (cid, c.section, c.text)
                        for cid, c in zip(chunk_ids, doc.chunks, strict=True)
                    ),
                )
                rows = reindex.keyword_rows(tokenizer, source)
                keywords.extend(rows)
                keyword_rows += len(rows)
                if len(keywords) >= KEYWORD_BATCH:  # one statement for many documents
                    portable.write_keywords(conn, keywords)
                    keywords.clear()
                loaded["documents"] += 1
                loaded["chunks"] += len(doc.chunks)
            elif kind == "vector":
                model, embed_hash, vector = _vector(record, reader)
                batch = pending.setdefault(model, [])
                batch.append((embed_hash, vector))
                counts["vectors"] += 1
                if len(batch) >= VECTOR_BATCH:
                    flush(model)
            else:
                raise reader.error(f"unknown record kind {kind!r}")
        for model in list(pending):
            flush(model)
        portable.write_keywords(conn, keywords)
        if end is None:
            raise UserError(
                f"{reader.file} is truncated: it has no end record",
                "export the index again; the store was not changed",
            )
        for key, value in counts.items():
            if end.get(key) != value:
                raise UserError(
                    f"{reader.file} is damaged: its end record counts {end.get(key)!r} {key}, "
                    f"the file holds {value}",
                    "export the index again; the store was not changed",
                )
    return ImportReport(
        file=str(reader.file),
        store=store_name(conn),
        target=settings.store_key,
        replaced_documents=replaced,
        documents=loaded["documents"],
        chunks=loaded["chunks"],
        vectors=counts["vectors"],
        meta=counts["meta"],
        keyword_rows=keyword_rows,
        source_store=str(reader.header.get("store")),
        schema_version=int(reader.header["schema_version"]),
        skipped=skipped,
    )


class _Reader:
    """The records of an export file, each a dict whose `kind` is known; UserError naming
    the file (and line) for anything that is not a whole, valid export."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.line = 0
        try:
            raw = open(file, "rb")  # noqa: SIM115 (closed by close())
        except FileNotFoundError:
            raise UserError(f"no such file: {file}") from None
        except IsADirectoryError:
            raise UserError(f"{file} is a folder, not an export file") from None
        except OSError as exc:
            raise UserError(f"cannot read {file}: {exc.strerror or exc}") from None
        self._raw = raw
        magic = raw.read(2)
        raw.seek(0)
        binary: IO[bytes] = (
            gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw  # type: ignore[assignment]
        )
        self._text = io.TextIOWrapper(binary, encoding="utf-8", errors="strict", newline="\n")
        self.header = self._header()

    def close(self) -> None:
        self._raw.close()

    def error(self, what: str) -> UserError:
        return UserError(
            f"{self.file}, line {self.line}: {what}",
            "it is not a whole tsm export; the store was not changed",
        )

    def _lines(self) -> Iterator[str]:
        while True:
            try:
                line = self._text.readline(MAX_RECORD_CHARS + 1)
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
                raise UserError(
                    f"{self.file} is truncated or damaged ({_reason(exc)})",
                    "export the index again; the store was not changed",
                ) from None
            except UnicodeDecodeError:
                if not self.line:
                    raise UserError(f"{self.file} is not a tsm export (not UTF-8 text)") from None
                raise self.error("not UTF-8 text") from None
            except OSError as exc:
                raise UserError(f"cannot read {self.file}: {exc.strerror or exc}") from None
            if not line:
                return
            self.line += 1
            if len(line) > MAX_RECORD_CHARS:  # a gzip bomb must not fill the memory
                raise self.error(f"a record longer than {MAX_RECORD_CHARS:,} characters")
            yield line

    def _parse(self, line: str) -> Any:
        try:
            return json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise self.error("not a JSON object") from None

    def _header(self) -> dict[str, Any]:
        self._iter = self._lines()
        first = next(self._iter, None)
        if first is None:
            raise UserError(f"{self.file} is empty: it is not a tsm export")
        try:
            header = json.loads(first, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise UserError(
                f"{self.file} is not a tsm export (no tsm-export header)",
                "make one with `tsm export FILE`",
            )
        version = header.get("format_version")
        if version != FORMAT_VERSION:
            raise UserError(
                f"{self.file} is a tsm export of format version {version!r}; "
                f"this tsm reads version {FORMAT_VERSION}",
                "export it again with this version of tsm",
            )
        from ..store import migrations

        schema = header.get("schema_version")
        if (
            not isinstance(schema, int)
            or not _is_int(schema)
            or not 1 <= schema <= migrations.LATEST
        ):
            raise UserError(
                f"{self.file} comes from an index of schema version {schema!r}; "
                f"this tsm knows versions 1 to {migrations.LATEST}",
                "import it with the tsm that exported it, or a newer one",
            )
        return header

    def records(self) -> Iterator[dict[str, Any]]:
        for line in self._iter:
            if not line.strip():
                continue
            record = self._parse(line)
            if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
                raise self.error("a record without a kind")
            if record["kind"] == "meta":
                _check(self, record, {"key": str, "value": (str, None)})
            elif record["kind"] == "end":
                _check(self, record, {"meta": int, "documents": int, "chunks": int, "vectors": int})
            yield record


def _reason(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "it ends before the end of its compressed data"
    return str(exc) or type(exc).__name__


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_INT <= value <= MAX_INT


# field → the types it may have (None: null allowed; float accepts an int)
Spec = Mapping[str, Any]
_DOCUMENT: Spec = {
    "path": str,
    "type": str,
    "title": str,
    "content_hash": str,
    "size": int,
    "mtime": float,
    "category": str,
    "status": (str, None),
    "created": (str, None),
    "updated": (str, None),
    "doc_date": (str, None),
    "date_source": (str, None),
    "aliases": list,
    "text": str,
    "indexed_at": float,
    "chunks": list,
    "tags": list,
    "links": list,
    "names": list,
}
_CHUNK: Spec = {
    "chunk_index": int,
    "section": str,
    "page": (int, None),
    "line": (int, None),
    "chunk_date": (str, None),
    "text": str,
    "embed_hash": str,
}
_LINK: Spec = {"target": str, "link_type": str, "target_key": str}
_NAME: Spec = {"name": str, "kind": str}
_VECTOR: Spec = {"model": str, "embed_hash": str, "dim": int, "vector": str}


def _fits(value: Any, allowed: Any) -> bool:
    options = allowed if isinstance(allowed, tuple) else (allowed,)
    for option in options:
        if option is None and value is None:
            return True
        if option is int and _is_int(value):
            return True
        if option is float and (_is_int(value) or isinstance(value, float)):
            return True
        if option in (str, list) and isinstance(value, option):
            return True
    return False


def _check(reader: _Reader, record: Any, spec: Spec, where: str = "") -> None:
    if not isinstance(record, dict):
        raise reader.error(f"{where or 'a record'} is not a JSON object")
    for name, allowed in spec.items():
        if name not in record:
            raise reader.error(f"{where}{record.get('kind', '')} record without {name!r}")
        if not _fits(record[name], allowed):
            raise reader.error(f"{where}{name!r} has a value of the wrong type")


def _strings(reader: _Reader, values: list[Any], what: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in values):
        raise reader.error(f"{what} must be strings")
    return tuple(values)


def _document(record: dict[str, Any], reader: _Reader) -> portable.PortableDocument:
    _check(reader, record, _DOCUMENT)
    for i, chunk in enumerate(record["chunks"]):
        _check(reader, chunk, _CHUNK, f"chunk {i}: ")
    for link in record["links"]:
        _check(reader, link, _LINK, "link: ")
    for name in record["names"]:
        _check(reader, name, _NAME, "name: ")
    aliases = _strings(reader, record["aliases"], "aliases")
    tags = _strings(reader, record["tags"], "tags")
    if not record["path"]:
        raise reader.error("a document with an empty path")
    if "\0" in record["path"] or (
        record["type"] != "session" and note_file("", record["path"]) is None
    ):
        # a session's key may be absolute (a transcript outside the root); a note's is
        # always a path inside the root, and tsm reads the note there
        raise reader.error(f"document {record['path']!r} is no path inside the index root")
    from ..store import migrations

    # A chunk's line is the line its text starts on since m008; before, its section's.
    lines_kept = int(reader.header["schema_version"]) > migrations.MIGRATIONS.index(
        migrations.m008_chunk_lines
    )
    fields: dict[str, Any] = {c: record[c] for c in portable.DOCUMENT_COLUMNS}
    fields["aliases"] = portable.aliases_json(aliases)
    fields["mtime"] = float(record["mtime"])
    fields["indexed_at"] = float(record["indexed_at"])
    return portable.PortableDocument(
        **fields,
        chunks=tuple(
            portable.PortableChunk(
                **{n: c[n] for n in portable.CHUNK_COLUMNS if n != "line"},
                line=c["line"] if lines_kept else None,
            )
            for c in record["chunks"]
        ),
        tags=tags,
        links=tuple(portable.PortableLink(**{n: x[n] for n in _LINK}) for x in record["links"]),
        names=tuple(portable.PortableName(**{n: x[n] for n in _NAME}) for x in record["names"]),
    )


def _vector(record: dict[str, Any], reader: _Reader) -> tuple[str, str, Any]:
    import numpy as np

    _check(reader, record, _VECTOR)
    dim = record["dim"]
    try:
        data = base64.b64decode(record["vector"], validate=True)
    except (binascii.Error, ValueError):
        raise reader.error("a vector that is not base64") from None
    if dim <= 0 or len(data) != dim * 4:
        raise reader.error(f"a vector of {len(data)} bytes, not {dim} float32 values")
    vector = np.frombuffer(data, dtype="<f4").astype(np.float32)
    return record["model"], record["embed_hash"], vector
