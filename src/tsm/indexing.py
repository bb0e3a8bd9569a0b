"""The indexing pipeline: discover → read → chunk → tokenize → store (one transaction per
file), then embed whatever text still lacks a vector. Unchanged files cost a stat() call."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from stat import S_ISLNK

from .config import Settings
from .embed import Embedder, passage_text
from .errors import EmbedderUnavailable, UserError
from .models import Document
from .sources import Reader, SkipFile, discover, load_bytes, reader_for
from .sources.files import Reach, display, storable
from .store import documents, vectors
from .store.connect import Connection, Transaction
from .text.chunk import chunk_sections
from .text.tokenizer import compiled_user_dict, get_tokenizer
from .workspace import IgnoreRules

# progress(done, total, label) — the CLI draws a bar with it; the library never prints.
Progress = Callable[[int, int, str], None]

# Transcripts are streamed (memory stays flat), so only time grows with size: a cap far
# above real sessions (190 MB seen) that still stops a runaway file.
MAX_TRANSCRIPT_BYTES = 1024 * 1024 * 1024
UNDECODABLE_NAME = "file name is not valid UTF-8; rename it to index it"
_FILENAME_DATE = re.compile(r"(?<!\d)(\d{4})[-_/.]?(\d{2})[-_/.]?(\d{2})(?!\d)")


@dataclass
class IndexReport:
    """What an index run did; serialised by `tsm index -f json`."""

    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    renamed: int = 0
    chunks: int = 0
    embedded: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    took_ms: float = 0.0
    malformed_lines: int = 0  # transcript lines skipped as broken (each named in `warnings`)
    # The daemon indexed this and embeds the new text in its background backfill.
    embedded_in_background: bool = False


def index_paths(
    settings: Settings,
    conn: Connection,
    paths: Iterable[Path] = (),
    *,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Index files or folders (default: the content dirs, else the whole root) and embed."""
    started = time.perf_counter()
    report = IndexReport()
    root = settings.index_root
    rules = IgnoreRules(root)
    report.warnings += rules.warnings
    reach = Reach.of(root, [d.path for d in settings.content_dirs], rules)
    targets, scopes = _targets(settings, conn, list(paths), reach, report)
    files = [f for target in targets for f in discover(root, target, rules)]
    stored = documents.stored_files(conn)
    seen: set[str] = set()
    for done, path in enumerate(files, start=1):
        rel = PurePosixPath(path.relative_to(root)).as_posix()
        seen.add(rel)
        if storable(rel):
            _index_file(settings, conn, path, rel, stored, report, reach=reach)
        else:  # stored, it would abort the run (SQLite and JSON need valid Unicode)
            report.skipped.append({"path": display(rel), "reason": UNDECODABLE_NAME})
        if progress:
            progress(done, len(files), display(rel))
    if not paths:
        for transcript in _session_files(settings):
            key = session_key(settings, transcript)
            seen.add(key)
            _index_session(settings, conn, transcript, key, stored.get(key), report)
    for rel, old in documents.stored_files(conn).items():  # fresh: renames already moved
        if rel.startswith(("~/", "/")):  # transcripts outside the root: ingested explicitly
            continue
        if rel not in seen and any(_within(rel, s) for s in scopes) and not (root / rel).exists():
            with Transaction(conn):
                documents.delete_document(conn, old.id)
            report.removed += 1
    if embedder is not None:
        embed_pending(conn, embedder, settings.get("embedding.batch_size"), report, progress)
        # Searches compare hits with generic requests (search/relevance.py); embedding those
        # once here, where the model is loaded anyway, spares the first search a second.
        from .search.relevance import generic_matrix

        generic_matrix(embedder, settings.state_dir / "cache")
    report.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return report


def _session_reader(path: Path, rel: str, data: bytes) -> Document:
    from .sources import session

    return session.read(path, rel, data)


def _session_files(settings: Settings) -> list[Path]:
    files: list[Path] = []
    for folder in settings.session_dirs:
        if folder.is_dir():  # subagent transcripts are all sidechain: nothing to ingest
            files += sorted(
                p
                for p in folder.rglob("*.jsonl")
                if "subagents" not in p.parts and not p.name.startswith("agent-")
            )
    return files


def session_key(settings: Settings, path: Path) -> str:
    """The stored path of a transcript: relative inside the root, else absolute with ~."""
    path = path.expanduser().resolve()
    try:
        return PurePosixPath(path.relative_to(settings.index_root)).as_posix()
    except ValueError:
        home = Path.home()
        return (
            "~/" + path.relative_to(home).as_posix()
            if path.is_relative_to(home)
            else path.as_posix()
        )


def ingest_session(
    settings: Settings,
    conn: Connection,
    path: Path,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Add or refresh one Claude Code transcript. An unchanged file is a no-op; a grown one is
    rewritten, and only its new turns need embedding (vectors are keyed by text hash).
    Anything but a transcript (a note, a `.jsonl` without one transcript line) is a user
    error: asked for by name, it is no file to skip quietly."""
    started = time.perf_counter()
    if not path.is_file():
        raise UserError(f"no such transcript: {path}")
    if path.suffix.lower() != ".jsonl":
        raise _not_a_transcript(path, "")
    report = IndexReport()
    key = session_key(settings, path)
    old = documents.stored_file(conn, key) if storable(key) else None
    _index_session(settings, conn, path, key, old, report, named=True)
    if embedder is not None and report.indexed:
        embed_pending(conn, embedder, settings.get("embedding.batch_size"), report, progress)
    report.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return report


def _index_session(
    settings: Settings,
    conn: Connection,
    path: Path,
    key: str,
    old: documents.StoredFile | None,
    report: IndexReport,
    named: bool = False,
) -> None:
    """Index one transcript, streamed (sources/session.py). A transcript that cannot be read
    or parsed this time keeps its indexed version: it is append-only, so a failure says
    nothing about what it held (a disk hiccup, a line being written, a file being moved).
    `named`: the user named this file (`ingest-session`), so one without a single transcript
    line is a UserError rather than a skip, unless it was ingested before (then it is a
    transcript that could not be read this time)."""
    from .sources import session

    if not storable(key):  # stored, it would abort the run (SQLite and JSON need valid Unicode)
        report.skipped.append({"path": display(key), "reason": UNDECODABLE_NAME})
        return

    try:
        info = path.stat()
        if old and old.size == info.st_size and old.mtime == info.st_mtime:
            report.unchanged += 1
            return
        if info.st_size > MAX_TRANSCRIPT_BYTES:
            raise SkipFile(f"larger than {MAX_TRANSCRIPT_BYTES // 2**20} MB ({info.st_size} bytes)")
        transcript, content_hash, info = session.stream(path)
        if named and not old and not transcript.records:
            raise session.NoTranscriptLines("no transcript lines")
        if old and old.content_hash == content_hash:
            with Transaction(conn):
                documents.touch(conn, old.id, info.st_size, info.st_mtime)
            report.unchanged += 1
            return
        doc = _with_date(session.document(key, transcript), info.st_mtime)
    except Exception as exc:  # a reader bug must cost this file's update, never its index
        if named and not old and isinstance(exc, session.NoTranscriptLines):
            raise _not_a_transcript(path, f" ({exc})") from None
        reason = _skip_reason(exc)
        if old:
            reason += "; the indexed version is kept"
        report.skipped.append({"path": key, "reason": reason})
        return
    if doc.malformed_lines:
        report.malformed_lines += doc.malformed_lines
        report.warnings.append(f"{key}: skipped {doc.malformed_lines} malformed lines")
    with Transaction(conn):
        for twin in documents.find_by_hash(conn, content_hash):
            if twin.path != key and not _stored_path(settings, twin.path).exists():
                documents.delete_document(conn, twin.id)  # moved: re-pointed, not duplicated
                report.renamed += 1
        report.chunks += write(
            settings, conn, doc, content_hash=content_hash, size=info.st_size, mtime=info.st_mtime
        )
    report.indexed += 1


def _not_a_transcript(path: Path, why: str) -> UserError:
    """Named by its absolute path, as the daemon receives it: the same text either way."""
    return UserError(
        f"{display(os.path.abspath(path))} is not a Claude Code transcript{why}: "
        "ingest-session accepts only Claude Code transcripts (.jsonl)",
        hint=None if why else "notes are indexed with `tsm index`",
    )


def _skip_reason(exc: Exception) -> str:
    if isinstance(exc, SkipFile):
        return str(exc)
    if isinstance(exc, OSError):
        return f"unreadable: {exc.strerror or exc}"
    return f"cannot parse: {type(exc).__name__}: {exc}"


def _stored_path(settings: Settings, key: str) -> Path:
    """Where a stored path points: `~/…` and absolute transcript keys, else inside the root."""
    if key.startswith("~/"):
        return Path.home() / key[2:]
    return Path(key) if key.startswith("/") else settings.index_root / key


def _targets(
    settings: Settings,
    conn: Connection,
    paths: list[Path],
    reach: Reach,
    report: IndexReport,
) -> tuple[list[Path], list[str]]:
    """Absolute targets to walk, and the relative scopes in which vanished files are removed.

    A path is placed by its name (`notes/x.md` is `notes/x.md` even when `notes` is a link);
    one whose real location is outside the root is skipped, and what was indexed under its
    name before is removed."""
    root = settings.index_root
    if not paths:
        dirs = [root / d.path for d in settings.content_dirs] or [root]
        return [d for d in dirs if d.exists()], [d.path for d in settings.content_dirs] or [""]
    targets, scopes = [], []
    for raw in paths:
        path, rel = _place(root, raw)
        if not storable(rel):
            if not (path.exists() or path.is_symlink()):
                raise UserError(f"no such file or directory: {display(str(raw))}")
            report.skipped.append({"path": display(rel), "reason": UNDECODABLE_NAME})
            continue
        if path.exists() or path.is_symlink():
            try:
                reach.resolve(path)
            except SkipFile as skip:
                report.skipped.append({"path": rel, "reason": str(skip)})
                report.removed += _forget(conn, rel)
                continue
            targets.append(path)
        elif documents.stored_file(conn, rel) is None and not documents.has_under(conn, rel):
            raise UserError(f"no such file or directory: {display(str(raw))}")
        scopes.append(rel)
    return targets, scopes


def _place(root: Path, raw: Path) -> tuple[Path, str]:
    """The absolute path of `raw` by name (`..` folded, links kept) and its path relative to
    the root; a path that reaches the root only through a link (an alias of the root) is
    taken by its real location."""
    path = Path(os.path.abspath(Path.cwd() / raw.expanduser()))
    for candidate in (path, path.resolve()):
        if candidate.is_relative_to(root):
            rel = PurePosixPath(candidate.relative_to(root)).as_posix()
            return candidate, "" if rel == "." else rel
    raise UserError(
        f"{display(str(raw))} is outside the index root {root}",
        "set TSM_INDEX_ROOT or run tsm from inside your notes",
    )


def _forget(conn: Connection, scope: str) -> int:
    """Remove what is indexed at or under `scope`: its name now leads out of the root."""
    doomed = [old.id for rel, old in documents.stored_files(conn).items() if _within(rel, scope)]
    with Transaction(conn):
        for doc_id in doomed:
            documents.delete_document(conn, doc_id)
    return len(doomed)


def _within(rel: str, scope: str) -> bool:
    return scope == "" or rel == scope or rel.startswith(scope.rstrip("/") + "/")


def _index_file(
    settings: Settings,
    conn: Connection,
    path: Path,
    rel: str,
    stored: dict[str, documents.StoredFile],
    report: IndexReport,
    reader: Reader | None = None,
    reach: Reach | None = None,
) -> None:
    """Index one file. With `reach`, a symlink is followed only to a file inside it (a file
    reached by a walk has no linked folder above it: discover does not follow those)."""
    old = stored.get(rel)
    reader = reader or reader_for(path)
    try:
        if reach is None:  # a transcript: its links are followed
            source = path.resolve()
            stat = source.stat()
        else:
            source, stat = path, path.lstat()
            if S_ISLNK(stat.st_mode):
                source = reach.resolve(path)
                stat = source.stat()
    except SkipFile as outside:  # a link out of the root: drop what was indexed under its name
        report.skipped.append({"path": rel, "reason": str(outside)})
        if old:
            with Transaction(conn):
                documents.delete_document(conn, old.id)
            report.removed += 1
        return
    except OSError as exc:
        report.skipped.append({"path": rel, "reason": f"unreadable: {exc.strerror}"})
        return
    if old and old.size == stat.st_size and old.mtime == stat.st_mtime:
        report.unchanged += 1
        return
    try:
        # Transcripts carry tool output and file snapshots: allow them to be larger.
        data = load_bytes(
            source,
            MAX_TRANSCRIPT_BYTES
            if reader is _session_reader
            else int(settings.get("index.max_file_mb") * 1024 * 1024),
        )
        content_hash = hashlib.sha256(data).hexdigest()
        if old and old.content_hash == content_hash:
            with Transaction(conn):
                documents.touch(conn, old.id, stat.st_size, stat.st_mtime)
            report.unchanged += 1
            return
        assert reader is not None
        doc = reader(path, rel, data)
    except Exception as exc:  # a reader bug must cost one file, never the whole run
        skip = (
            exc
            if isinstance(exc, SkipFile)
            else SkipFile(f"cannot parse: {type(exc).__name__}: {exc}")
        )
        report.skipped.append({"path": rel, "reason": str(skip)})
        if old and not skip.transient:  # the file no longer holds indexable text
            with Transaction(conn):
                documents.delete_document(conn, old.id)
            report.removed += 1
        return
    doc = _with_date(doc, stat.st_mtime)
    if doc.malformed_lines:
        report.warnings.append(f"{rel}: skipped {doc.malformed_lines} malformed lines")
    with Transaction(conn):
        for twin in documents.find_by_hash(conn, content_hash):
            if twin.path != rel and not (settings.index_root / twin.path).exists():
                documents.delete_document(conn, twin.id)  # renamed: re-pointed, not duplicated
                report.renamed += 1
        report.chunks += write(
            settings, conn, doc, content_hash=content_hash, size=stat.st_size, mtime=stat.st_mtime
        )
    report.indexed += 1


def write(
    settings: Settings,
    conn: Connection,
    doc: Document,
    *,
    content_hash: str,
    size: int,
    mtime: float,
    category: str | None = None,
) -> int:
    """Chunk, tokenize and store one document (inside the caller's transaction)."""
    tokenizer = get_tokenizer(compiled_user_dict(settings.state_dir))
    chunks = chunk_sections(doc.sections, settings.get("chunking.max_chars"))
    title_terms = tokenizer.index_text(doc.title + " " + " ".join(doc.aliases))
    section_terms: dict[str, str] = {}
    rows = []
    for chunk in chunks:
        if chunk.section not in section_terms:
            section_terms[chunk.section] = tokenizer.index_text(chunk.section)
        embed_input = passage_text(doc.title, chunk.section, chunk.text)
        rows.append(
            documents.ChunkRow(
                chunk=chunk,
                fts_title=title_terms,
                fts_section=section_terms[chunk.section],
                fts_body=tokenizer.index_text(chunk.text),
                embed_hash=hashlib.sha1(embed_input.encode()).hexdigest(),
            )
        )
    fts_tags = " ".join(tokenizer.index_text(t.replace("/", " ")) for t in doc.tags)
    documents.write_document(
        conn,
        doc,
        rows,
        content_hash=content_hash,
        size=size,
        mtime=mtime,
        category=category
        or ("session" if doc.type == "session" else category_of(settings, doc.path)),
        fts_tags=fts_tags,
    )
    return len(rows)


def category_of(settings: Settings, rel: str) -> str:
    """The content dir's category, else the top folder's name, else `note`."""
    for content_dir in settings.content_dirs:
        if _within(rel, content_dir.path) and content_dir.category:
            return content_dir.category
    parts = PurePosixPath(rel).parts
    return parts[0] if len(parts) > 1 else "note"


def _with_date(doc: Document, mtime: float) -> Document:
    """Document date: frontmatter (set by the reader), else a date in the path, else mtime."""
    if doc.date:
        return doc
    for match in _FILENAME_DATE.finditer(doc.path):
        try:
            date = dt.date(*map(int, match.groups()))
        except ValueError:
            continue
        if 1970 <= date.year <= 2100:
            return replace(doc, date=date.isoformat(), date_source="filename")
    stamp = dt.datetime.fromtimestamp(mtime).date().isoformat()
    return replace(doc, date=stamp, date_source="mtime")


def embed_pending(
    conn: Connection,
    embedder: Embedder,
    batch_size: int,
    report: IndexReport | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
) -> int:
    """Embed chunk texts that have no vector for this model yet, one transaction per batch.

    A model failure stops embedding with a warning; FTS results stay intact.
    """
    todo = vectors.pending(conn, embedder.name, limit)
    done = 0
    started = time.monotonic()
    if progress and todo:
        progress(0, len(todo), "embedding")  # the bar shows before the first batch is done
    with Transaction(conn):
        vectors.set_meta(conn, "model_name", embedder.name)
        vectors.set_meta(conn, "embedding_dim", str(embedder.dim))
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        try:
            matrix = embedder.embed_documents(
                [passage_text(p.title, p.section, p.text) for p in batch]
            )
        except Exception as exc:
            message = f"embedding stopped after {done} chunks: {exc}"
            if report is None:
                raise EmbedderUnavailable(message) from None
            report.warnings.append(message)
            break
        with Transaction(conn):
            vectors.store(
                conn, embedder.name, zip((p.embed_hash for p in batch), matrix, strict=True)
            )
        done += len(batch)
        if progress:
            progress(done, len(todo), "embedding")
    if report is not None:
        report.embedded += done
    with Transaction(conn):
        vectors.drop_orphans(conn)
        if done:  # the recent rate `tsm status` shows
            vectors.set_meta(conn, "embed_rate", f"{done / (time.monotonic() - started):.2f}")
            vectors.set_meta(conn, "embed_rate_at", dt.datetime.now().isoformat("T", "seconds"))
    return done
