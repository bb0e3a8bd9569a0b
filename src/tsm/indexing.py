"""The indexing pipeline: discover → read → chunk → tokenize → store (one transaction per
file), then embed whatever text still lacks a vector. Unchanged files cost a stat() call.

Several writers may index into one PostgreSQL store at once (two machines, overlapping
folders). Each document's rows commit in one transaction that first locks the document's
path (store/documents.lock_paths) and then checks again what was decided before it: the file
still holds the bytes that were read (else it is read again, so the last content wins), the
stored row is not already this content (another writer stored it: a touch), a vanished file
is still missing. A transaction that loses a race with another writer anyway (a deadlock, a
unique key inserted twice) is run again (`_locked`), never shown to the user.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import random
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path, PurePosixPath
from stat import S_ISLNK
from typing import TYPE_CHECKING, TypeVar

from .config import Settings
from .embed import Embedder, embed_document_batches, passage_text
from .errors import EmbedderUnavailable, UserError
from .indexing_pool import WorkAhead, fill
from .models import Document
from .sources import SkipFile, discover, load_bytes, reader_for, walk
from .sources.commit_dates import CommitDates
from .sources.files import Reach, display, storable
from .statedir import embedding_role
from .store import documents, failures, keywords, vectors
from .store.chunks import chunk_document_pairs
from .store.connect import Connection, Transaction, grouped, pipelined
from .text.chunk import chunk_sections
from .text.tokenizer import compiled_user_dict, get_tokenizer
from .workspace import IgnoreRules

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

# progress(done, total, label) — the CLI draws a bar with it; the library never prints.
Progress = Callable[[int, int, str], None]

# Transcripts are streamed (memory stays flat), so only time grows with size: a cap far
# above real sessions (190 MB seen) that still stops a runaway file.
MAX_TRANSCRIPT_BYTES = 1024 * 1024 * 1024
UNDECODABLE_NAME = "file name is not valid UTF-8; rename it to index it"
BROKEN_LINK = "a symbolic link to no file (broken, or a loop)"
_FILENAME_DATE = re.compile(r"(?<!\d)(\d{4})[-_/.]?(\d{2})[-_/.]?(\d{2})(?!\d)")
# How often a write that lost a race with another writer is run again, and how often a file
# that changed while it was being stored is read again, before giving up.
WRITE_ATTEMPTS = 8
READ_ATTEMPTS = 3
CHANGED_WHILE_INDEXED = "changed while being indexed; the next `tsm index` indexes it"


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

    def unwalkable(folder: Path, reason: str) -> None:
        rel = PurePosixPath(folder.relative_to(root)).as_posix()
        report.skipped.append({"path": display(rel), "reason": reason})

    files = [f for target in targets for f in discover(root, target, rules, unwalkable)]
    stored = documents.stored_files(conn)
    seen: set[str] = set()
    rels = [PurePosixPath(path.relative_to(root)).as_posix() for path in files]
    commits = CommitDates(root, rels)  # runs git only when a file needs a date
    # Files that look changed are read, parsed and tokenized ahead in worker processes; this
    # process decides and stores each file in order as before, using their work.
    candidates = _changed_files(settings, files, rels, stored)
    fresh = StoredAhead(conn, rels)
    # The documents' transactions are committed a group at a time (store/connect.grouped).
    with (
        grouped(conn),
        WorkAhead[str, Parsed | None](parse_file, start_parsing, (settings, reach)) as ahead,
    ):
        for done, (path, rel) in enumerate(zip(files, rels, strict=True), start=1):
            fill(ahead, candidates)
            seen.add(rel)
            if storable(rel):
                _index_file(settings, conn, path, rel, stored, report, reach, commits, ahead, fresh)
            else:  # stored, it would abort the run (SQLite and JSON need valid Unicode)
                report.skipped.append({"path": display(rel), "reason": UNDECODABLE_NAME})
            ahead.forget(rel)
            if progress:
                progress(done, len(files), display(rel))
        if not paths:
            for transcript, folder in _session_files(settings, report):
                key = session_key(settings, transcript)
                seen.add(key)
                _index_session(
                    settings, conn, transcript, key, stored.get(key), report, within=folder
                )
        for rel, old in documents.stored_files(conn).items():  # fresh: renames already moved
            if rel.startswith(("~/", "/")):  # transcripts outside the root: ingested explicitly
                continue
            if rel not in seen and any(_within(rel, s) for s in scopes) and not _exists(root / rel):
                report.removed += _locked(
                    conn, [rel], partial(_remove_vanished, conn, root, rel, old.id)
                )
    if report.indexed or report.removed or report.renamed:
        keywords.settle(conn)  # after the group's last commit: outside any transaction
    if embedder is not None:
        # Searches compare hits with generic requests (search/relevance.py); embedding those
        # once here, where the model is loaded anyway, spares the first search a second, and
        # lets embedding store the noise level they give.
        from .search.relevance import generic_matrix

        generic_matrix(embedder, settings.state_dir / "cache")
        embed_pending(
            conn,
            embedder,
            settings.get("embedding.batch_size"),
            report,
            progress,
            role=settings.state_dir,
        )
    report.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return report


def _exists(path: Path) -> bool:
    """Whether `path` is there. One that cannot be looked at (too long, a folder on its way
    unreadable: the walk reported it as skipped) counts as there, so its indexed version is
    kept rather than removed or the run failed."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def _locked(conn: Connection, paths: Sequence[str] | None, work: Callable[[], T]) -> T:
    """`work()` in a transaction that first locks `paths` (documents.lock_paths; None: no
    document, as for vectors), run again when it loses a race with another writer of a
    PostgreSQL store (store/failures.retryable): the server rolled it back, so nothing of
    it stays. Any other error, or a race lost WRITE_ATTEMPTS times, propagates. On
    PostgreSQL its statements are pipelined: only those whose answer the work reads wait
    for the server."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            with pipelined(conn), Transaction(conn):
                if paths is not None:
                    documents.lock_paths(conn, paths)
                return work()
        except Exception as exc:
            if attempt == WRITE_ATTEMPTS or not failures.retryable(exc):
                raise
            time.sleep(random.uniform(0, 0.005 * 2**attempt))  # apart, so they do not meet again
    raise AssertionError("unreachable")


class _FileChanged(Exception):
    """The file no longer holds the bytes that were read: read it again."""


def _remove_vanished(conn: Connection, root: Path, rel: str, doc_id: int) -> int:
    """Remove document `doc_id` at `rel` if its file is still missing (another writer may
    have seen it come back); 1 if this call removed it. The row is read first, as in
    `_index_file_once`: its answer comes once the path is held, so the file is looked for
    under the lock."""
    current = documents.stored_file(conn, rel)
    if current is None or current.id != doc_id or _exists(root / rel):
        return 0
    return int(documents.delete_document(conn, doc_id))


def _session_files(settings: Settings, report: IndexReport) -> list[tuple[Path, Path]]:
    """The transcripts in the session folders (sessions.dirs). One that is a symlink is read
    only if it leads to a file inside its own folder: a session folder inside the index root
    (which a repository's tsm.toml may name) could otherwise hold links to any file of the
    user's, another project's transcripts included. Those are reported as skipped. Each
    comes with its folder resolved, from which it is opened (session.stream)."""
    files: list[tuple[Path, Path]] = []
    root = settings.index_root

    def skip(path: Path, reason: str) -> None:
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        report.skipped.append({"path": display(shown.as_posix()), "reason": reason})

    for folder in settings.session_dirs:
        if not folder.is_dir():
            continue
        inside = Path(os.path.realpath(folder))
        found = [
            here / name
            for here, _, names in walk(folder, skip)
            for name in names
            if name.endswith(".jsonl")
        ]
        for path in sorted(found):
            if "subagents" in path.parts or path.name.startswith("agent-"):
                continue  # subagent transcripts are all sidechain: nothing to ingest
            refused = _refused_link(path, inside)
            if refused:
                skip(path, refused)
                continue
            files.append((path, inside))
    return files


def _refused_link(path: Path, inside: Path) -> str | None:
    """Why a transcript that is a symlink is not read (None: it is not one, or it leads to a
    file inside `inside`, its sessions folder resolved)."""
    if not path.is_symlink():
        return None
    from .sources.session import OUTSIDE_ITS_FOLDER

    real = Path(os.path.realpath(path))  # a loop, unlike Path.resolve(), raises nothing
    if not real.is_relative_to(inside):
        return OUTSIDE_ITS_FOLDER
    return None if real.is_file() else BROKEN_LINK


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
    error: asked for by name, it is no file to skip quietly. So is a file that is not the
    user's own transcript of this index root or a sessions folder (sources/session_origin),
    which is then read from that folder down, no link followed."""
    from .sources.session_origin import ingest_folder

    started = time.perf_counter()
    if not path.is_file():
        raise UserError(f"no such transcript: {path}")
    if path.suffix.lower() != ".jsonl":
        raise _not_a_transcript(path, "")
    within = ingest_folder(settings, path, os.environ)
    report = IndexReport()
    key = session_key(settings, path)
    old = documents.stored_file(conn, key) if storable(key) else None
    _index_session(settings, conn, path, key, old, report, named=True, within=within)
    if embedder is not None and report.indexed:
        embed_pending(
            conn,
            embedder,
            settings.get("embedding.batch_size"),
            report,
            progress,
            role=settings.state_dir,
        )
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
    within: Path | None = None,
) -> None:
    """Index one transcript, streamed (sources/session.py), from `within` (its sessions
    folder, resolved) down when it was found in one. A transcript that cannot be read
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
        old = documents.stored_file(conn, key)  # fresh: another writer may have stored it
        if old and old.size == info.st_size and old.mtime == info.st_mtime:
            report.unchanged += 1
            return
        if info.st_size > MAX_TRANSCRIPT_BYTES:
            raise SkipFile(f"larger than {MAX_TRANSCRIPT_BYTES // 2**20} MB ({info.st_size} bytes)")
        transcript, content_hash, info = session.stream(path, within)
        if named and info.st_uid != os.getuid():  # swapped for another's since it was vetted
            raise SkipFile("belongs to another user")
        if named and not old and not transcript.records:
            raise session.NoTranscriptLines("no transcript lines")
    except Exception as exc:  # a reader bug must cost this file's update, never its index
        if named and not old and isinstance(exc, session.NoTranscriptLines):
            raise _not_a_transcript(path, f" ({exc})") from None
        _keep_session(key, old, exc, report)
        return
    if old and old.content_hash == content_hash:
        old_id, size, mtime = old.id, info.st_size, info.st_mtime
        if _locked(conn, [key], lambda: documents.touch(conn, old_id, size, mtime)):
            report.unchanged += 1
            return
        # another writer removed or rewrote it meanwhile: store this content anew
    try:
        doc = _with_date(session.document(key, transcript), info.st_mtime)
    except Exception as exc:  # a reader bug must cost this file's update, never its index
        _keep_session(key, old, exc, report)
        return
    if doc.malformed_lines:
        report.malformed_lines += doc.malformed_lines
        report.warnings.append(f"{key}: skipped {doc.malformed_lines} malformed lines")
    rows = prepare(settings, doc)  # tokenized before the transaction: its locks stay short

    def store() -> tuple[int, int] | None:
        """(twins removed, chunks written), or None when the index already holds this or a
        later state of the transcript: it grew since it was read, and another writer stored
        more of it (append-only: what was read is then a part of what is stored)."""
        current, twins = documents.stored_and_twins(conn, key, content_hash)
        if current and current.content_hash == content_hash:
            return None
        if current and current.size > info.st_size and _grew(path, info):
            return None
        return _store_over_twins(
            settings,
            conn,
            (doc, rows, content_hash),
            twins,
            lambda twin: not _stored_path(settings, twin).exists(),
            info,
        )

    _tally(report, _locked(conn, [key], store))


def _store_over_twins(
    settings: Settings,
    conn: Connection,
    prepared: tuple[Document, Prepared, str],
    twins: Iterable[documents.StoredFile],
    gone: Callable[[str], bool],
    info: os.stat_result,
) -> tuple[int, int]:
    """Store a prepared document (document, its rows, its content hash), first removing its
    twins (the same bytes under another path) whose file is `gone`: a renamed file is
    re-pointed, not duplicated. (twins removed, chunks written); call under _locked."""
    doc, rows, content_hash = prepared
    renamed = 0
    for twin in twins:
        if gone(twin.path) and documents.lock_twin(conn, twin.path):
            renamed += documents.delete_document(conn, twin.id)
    chunks = store_rows(
        settings,
        conn,
        doc,
        rows,
        content_hash=content_hash,
        size=info.st_size,
        mtime=info.st_mtime,
    )
    return renamed, chunks


def _tally(report: IndexReport, done: tuple[int, int] | None) -> None:
    """Count one store (_store_over_twins's result), or None: the index already held it."""
    if done is None:
        report.unchanged += 1
        return
    report.renamed += done[0]
    report.chunks += done[1]
    report.indexed += 1


def _keep_session(
    key: str, old: documents.StoredFile | None, exc: Exception, report: IndexReport
) -> None:
    reason = _skip_reason(exc)
    if old:
        reason += "; the indexed version is kept"
    report.skipped.append({"path": key, "reason": reason})


def _grew(path: Path, info: os.stat_result) -> bool:
    """Whether the file at `path` changed since `info` was taken (a transcript grows)."""
    try:
        now = path.stat()
    except OSError:
        return False
    return (now.st_size, now.st_mtime_ns) != (info.st_size, info.st_mtime_ns)


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
    doomed = {
        rel: old.id for rel, old in documents.stored_files(conn).items() if _within(rel, scope)
    }
    return _locked(
        conn, list(doomed), lambda: sum(documents.delete_document(conn, i) for i in doomed.values())
    )


def _within(rel: str, scope: str) -> bool:
    return scope == "" or rel == scope or rel.startswith(scope.rstrip("/") + "/")


def _index_file(
    settings: Settings,
    conn: Connection,
    path: Path,
    rel: str,
    stored: dict[str, documents.StoredFile],
    report: IndexReport,
    reach: Reach,
    commits: CommitDates,
    ahead: WorkAhead[str, Parsed | None] | None = None,
    fresh: StoredAhead | None = None,
) -> None:
    """Index one file. A symlink is followed only to a file inside `reach` (a file reached
    by a walk has no linked folder above it: discover does not follow those).
    `stored` is the index as the run began; another writer may have changed it since, so a
    file that looks changed is looked up again before it is read (in `fresh`, if given)."""
    old = stored.get(rel)
    for _ in range(READ_ATTEMPTS):
        try:
            _index_file_once(settings, conn, path, rel, old, report, reach, commits, ahead, fresh)
            return
        except _FileChanged:
            old = documents.stored_file(conn, rel)
            ahead = None  # a second attempt reads the file anew: nothing ahead fits it
    report.skipped.append({"path": rel, "reason": CHANGED_WHILE_INDEXED})


# Files looked up again before they are read, per statement (StoredAhead).
LOOKUP_WINDOW = 64


class StoredAhead:
    """What the index holds now at the files about to be indexed, read LOOKUP_WINDOW paths
    at a time: a file that looks changed is looked up again before it is read (another
    writer may have stored it since the run began), and one statement serves the next
    files too, rather than a wait for the server each. It only spares work: the decision is
    made again under the path's lock when the file is stored."""

    def __init__(self, conn: Connection, rels: Sequence[str]) -> None:
        self._conn = conn
        self._rels = rels
        self._position = {rel: i for i, rel in enumerate(rels)}
        self._window: dict[str, documents.StoredFile | None] = {}

    def __call__(self, rel: str) -> documents.StoredFile | None:
        if rel not in self._window:
            start = self._position.get(rel)
            if start is None:
                return documents.stored_file(self._conn, rel)
            # A name that is not valid Unicode is never stored, nor can it be asked about.
            paths = [p for p in self._rels[start : start + LOOKUP_WINDOW] if storable(p)]
            found = documents.stored_files_at(self._conn, paths)
            self._window = {path: found.get(path) for path in paths}
        return self._window.pop(rel)


def _cannot_read(
    conn: Connection,
    rel: str,
    old: documents.StoredFile | None,
    exc: Exception,
    report: IndexReport,
) -> None:
    """Skip a file that cannot be read or parsed; drop its indexed version unless the
    failure may pass (an I/O error: SkipFile.transient)."""
    skip = (
        exc if isinstance(exc, SkipFile) else SkipFile(f"cannot parse: {type(exc).__name__}: {exc}")
    )
    report.skipped.append({"path": rel, "reason": str(skip)})
    if old and not skip.transient:  # the file no longer holds indexable text
        old_id = old.id
        report.removed += _locked(conn, [rel], lambda: documents.delete_document(conn, old_id))


@dataclass(frozen=True)
class Parsed:
    """One file's bytes parsed and tokenized, or why they cannot be."""

    content_hash: str
    doc: Document | None = None
    prepared: Prepared | None = None
    failure: SkipFile | None = None


def _parse(settings: Settings, path: Path, rel: str, data: bytes, content_hash: str) -> Parsed:
    """Parse and tokenize a file's bytes: the CPU work, done in a worker or here."""
    reader = reader_for(path)
    try:
        assert reader is not None  # discover yields only the kinds a reader reads
        doc = reader(path, rel, data)
    except SkipFile as skip:
        return Parsed(content_hash, failure=skip)
    except Exception as exc:  # a reader bug must cost one file, never the whole run
        return Parsed(content_hash, failure=SkipFile(f"cannot parse: {type(exc).__name__}: {exc}"))
    return Parsed(content_hash, doc, prepare(settings, doc))


def _changed_files(
    settings: Settings, files: list[Path], rels: list[str], stored: dict[str, documents.StoredFile]
) -> Iterator[tuple[str, tuple[Path, str], int]]:
    """Jobs for WorkAhead: the files that look changed, in the loop's order, with their size."""
    first = True
    for path, rel in zip(files, rels, strict=True):
        size = _changed_size(path, stored.get(rel)) if storable(rel) else None
        if size is not None:
            if first:  # built here, before any worker looks for it (two would race)
                compiled_user_dict(settings.state_dir)
                first = False
            yield rel, (path, rel), size


def _changed_size(path: Path, old: documents.StoredFile | None) -> int | None:
    """The size of a file worth parsing ahead (not indexed yet, or its size or time moved);
    None for one that is not."""
    try:
        info = path.stat()
    except OSError:
        return None
    if old is None or old.size != info.st_size or old.mtime != info.st_mtime:
        return info.st_size
    return None


_worker: tuple[Settings, Reach] | None = None


def start_parsing(settings: Settings, reach: Reach) -> None:
    """Set up a worker process of WorkAhead: what parse_file needs for every file."""
    global _worker
    _worker = (settings, reach)


def parse_file(path: Path, rel: str) -> Parsed | None:
    """A worker's job: read, parse and tokenize one file as _index_file_once would. None
    when it cannot be read: the writer reads it itself and reports why."""
    assert _worker is not None
    settings, reach = _worker
    try:
        source = reach.resolve(path) if path.is_symlink() else path
        data = load_bytes(source, int(settings.get("index.max_file_mb") * 1024 * 1024), reach)
    except Exception:
        return None
    parsed = _parse(settings, path, rel, data, hashlib.sha256(data).hexdigest())
    if parsed.doc is None:
        return parsed
    # The writer stores the chunks made here and never reads the sections again: sent
    # back, they were a second copy of the text and half the cost of reading a note back.
    return replace(parsed, doc=replace(parsed.doc, sections=()))


def _index_file_once(
    settings: Settings,
    conn: Connection,
    path: Path,
    rel: str,
    old: documents.StoredFile | None,
    report: IndexReport,
    reach: Reach,
    commits: CommitDates,
    ahead: WorkAhead[str, Parsed | None] | None = None,
    fresh: StoredAhead | None = None,
) -> None:
    """_index_file's work; _FileChanged when the file changed between reading and storing.
    `ahead` may hold this file parsed by a worker: used when it read the same bytes."""
    try:
        source, stat = path, path.lstat()
        if S_ISLNK(stat.st_mode):
            source = reach.resolve(path)
            stat = source.stat()
    except SkipFile as outside:  # a link out of the root: drop what was indexed under its name
        report.skipped.append({"path": rel, "reason": str(outside)})
        if old:
            old_id = old.id
            report.removed += _locked(conn, [rel], lambda: documents.delete_document(conn, old_id))
        return
    except OSError as exc:
        report.skipped.append({"path": rel, "reason": f"unreadable: {exc.strerror}"})
        return
    if old and old.size == stat.st_size and old.mtime == stat.st_mtime:
        report.unchanged += 1
        return
    # fresh: another writer may have stored it
    old = fresh(rel) if fresh is not None else documents.stored_file(conn, rel)
    if old and old.size == stat.st_size and old.mtime == stat.st_mtime:
        report.unchanged += 1
        return
    limit = int(settings.get("index.max_file_mb") * 1024 * 1024)
    # A worker's parse of the bytes it read stands for a read here: storing reads the file
    # again and compares, so bytes changed since are caught like any other edit. Touching
    # does not compare, so a touch is decided on bytes read here.
    parsed = ahead.take(rel) if ahead is not None else None
    if parsed is not None and old is not None and old.content_hash == parsed.content_hash:
        parsed = None
    if parsed is None:
        try:
            data = load_bytes(source, limit, reach)  # opened from the root down, no link followed
        except Exception as exc:
            _cannot_read(conn, rel, old, exc, report)
            return
        content_hash = hashlib.sha256(data).hexdigest()
    else:
        content_hash = parsed.content_hash
    if old and old.content_hash == content_hash:
        old_id = old.id
        if _locked(conn, [rel], lambda: documents.touch(conn, old_id, stat.st_size, stat.st_mtime)):
            report.unchanged += 1
            return
        # another writer removed or rewrote it meanwhile: store this content anew
    if parsed is None:
        started = time.process_time()
        parsed = _parse(settings, path, rel, data, content_hash)
        if ahead is not None:
            ahead.observe(time.process_time() - started)
    if parsed.failure is not None:
        _cannot_read(conn, rel, old, parsed.failure, report)
        return
    assert parsed.doc is not None and parsed.prepared is not None
    doc = _with_date(parsed.doc, stat.st_mtime, lambda: commits.of(rel))
    if doc.malformed_lines:
        report.warnings.append(f"{rel}: skipped {doc.malformed_lines} malformed lines")
    rows = parsed.prepared  # tokenized before the transaction: its locks stay short

    def store() -> tuple[int, int] | None:
        """(twins removed, chunks written), or None when the index already held this."""
        # Read first: its answer comes once the path is held (on PostgreSQL the lock is sent
        # pipelined, and only a read waits for it), so the file is checked under the lock.
        current, twins = documents.stored_and_twins(conn, rel, content_hash)
        try:
            data_now = load_bytes(source, limit, reach)
            unchanged = hashlib.sha256(data_now).hexdigest() == content_hash
        except (OSError, SkipFile):
            unchanged = False
        if not unchanged:  # edited meanwhile: storing these bytes could undo a newer write
            raise _FileChanged(rel)
        if current and current.content_hash == content_hash:  # another writer stored it
            documents.touch(conn, current.id, stat.st_size, stat.st_mtime)
            return None
        return _store_over_twins(
            settings,
            conn,
            (doc, rows, content_hash),
            twins,
            lambda twin: not (settings.index_root / twin).exists(),
            stat,
        )

    _tally(report, _locked(conn, [rel], store))


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
    return store_rows(
        settings,
        conn,
        doc,
        prepare(settings, doc),
        content_hash=content_hash,
        size=size,
        mtime=mtime,
        category=category,
    )


@dataclass(frozen=True)
class Prepared:
    """A document chunked and tokenized, ready to store."""

    rows: list[documents.ChunkRow]
    fts_tags: str


def prepare(settings: Settings, doc: Document) -> Prepared:
    """Chunk and tokenize one document: the CPU work, done outside any transaction."""
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
    return Prepared(rows, fts_tags)


def store_rows(
    settings: Settings,
    conn: Connection,
    doc: Document,
    prepared: Prepared,
    *,
    content_hash: str,
    size: int,
    mtime: float,
    category: str | None = None,
) -> int:
    """Store a prepared document (inside the caller's transaction); its number of chunks.
    Nothing waits for the server here: its new id is not needed."""
    documents.send_document(
        conn,
        doc,
        prepared.rows,
        content_hash=content_hash,
        size=size,
        mtime=mtime,
        category=category
        or ("session" if doc.type == "session" else category_of(settings, doc.path)),
        fts_tags=prepared.fts_tags,
    )
    return len(prepared.rows)


def category_of(settings: Settings, rel: str) -> str:
    """The content dir's category, else the top folder's name, else `note`."""
    for content_dir in settings.content_dirs:
        if _within(rel, content_dir.path) and content_dir.category:
            return content_dir.category
    parts = PurePosixPath(rel).parts
    return parts[0] if len(parts) > 1 else "note"


def _with_date(
    doc: Document, mtime: float, committed: Callable[[], float | None] = lambda: None
) -> Document:
    """Document date: frontmatter (set by the reader), else a date in the path, else when
    the file was last committed in its git work tree (a clone's mtime is the clone's
    time), else mtime."""
    if doc.date:
        return doc
    for match in _FILENAME_DATE.finditer(doc.path):
        try:
            date = dt.date(*map(int, match.groups()))
        except ValueError:
            continue
        if 1970 <= date.year <= 2100:
            return replace(doc, date=date.isoformat(), date_source="filename")
    commit = committed()
    if commit is not None:
        stamp = dt.datetime.fromtimestamp(commit).date().isoformat()
        return replace(doc, date=stamp, date_source="git:commit")
    stamp = dt.datetime.fromtimestamp(mtime).date().isoformat()
    return replace(doc, date=stamp, date_source="mtime")


def _store_noise_level(conn: Connection, embedder: Embedder) -> None:
    """The prompt hook's noise level (search/relevance.py) over the vectors just written, kept
    in the index: a search without the daemon then reads it instead of computing it (a
    product over every vector, ~0.35 s per 40,000 chunks). Read a block of chunks at a time,
    so the process never holds the whole matrix beside the model."""
    from .search.relevance import cached_generic_matrix, noise_meta_key, noise_over, stored_noise
    from .search.vector import ANN_MIN_ROWS

    generic = cached_generic_matrix(embedder.name)
    if generic is None or generic.shape[1] != embedder.dim:
        return
    ids = [chunk for chunk, _ in chunk_document_pairs(conn)]
    if vectors.has_nearest_index(conn) and len(ids) >= ANN_MIN_ROWS:
        return  # searches there take the HNSW path, which has no noise level
    counted = 0

    def blocks() -> Iterator[np.ndarray]:
        nonlocal counted
        for start in range(0, len(ids), NOISE_BLOCK):
            part = ids[start : start + NOISE_BLOCK]
            matrix = vectors.load_matrix(conn, embedder.name, part, embedder.dim)[2]
            counted += len(matrix)
            yield matrix

    level = noise_over(generic, blocks())
    if counted:
        text = stored_noise(counted, level)
        _locked(conn, None, partial(vectors.set_meta, conn, noise_meta_key(embedder.name), text))


NOISE_BLOCK = 4096  # chunks read at a time for the noise level


def _make_room_for_the_model(pending: int) -> None:
    """Before a run long enough to load the bulk engine (embed/engines.py): the keyword
    tokenizer's dictionary (~90 MB mapped) and the heap left by parsing are handed back, so
    the process holds the model, not both."""
    from .embed.engines import SWITCH_AFTER_DOCUMENTS, release_memory
    from .text.tokenizer import release_tokenizer

    if pending > SWITCH_AFTER_DOCUMENTS:
        release_tokenizer()
        release_memory()


def embed_pending(
    conn: Connection,
    embedder: Embedder,
    batch_size: int,
    report: IndexReport | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
    *,
    role: Path | None = None,
) -> int:
    """Embed chunk texts that have no vector for this model yet (at most `limit`), one
    transaction per batch, then keep the books: orphan vectors dropped, the rate `tsm
    status` shows, the count of texts ever embedded, and the noise level once none is left.
    This is the one function that writes vectors, in-process and in the daemon alike.

    `role`: the state dir whose embedding role (statedir.embedding_role) to hold, waiting
    for another process that holds it: the pending list is read under it, so no text is
    embedded by two processes. A model failure stops embedding with a warning; FTS results
    stay intact.
    """
    if role is None:
        return _embed_pending(conn, embedder, batch_size, report, progress, limit)
    with embedding_role(role, wait=False) as held:
        if held:
            return _embed_pending(conn, embedder, batch_size, report, progress, limit)
    if progress:  # the wait may be long: say why nothing moves
        progress(0, 0, WAITING_FOR_EMBEDDER)
    with embedding_role(role):
        return _embed_pending(conn, embedder, batch_size, report, progress, limit)


WAITING_FOR_EMBEDDER = "waiting for another process (a daemon) that is embedding this index"


EMBEDDED_TEXTS = "embedded_texts"  # meta: texts embedded into this index, ever


def _embed_pending(
    conn: Connection,
    embedder: Embedder,
    batch_size: int,
    report: IndexReport | None,
    progress: Progress | None,
    limit: int | None,
) -> int:
    todo = vectors.pending_ids(conn, embedder.name)[:limit]
    done = 0
    started = time.monotonic()
    if progress and todo:
        progress(0, len(todo), "embedding")  # the bar shows before the first batch is done
    _make_room_for_the_model(len(todo))

    def set_model() -> None:
        vectors.set_meta(conn, "model_name", embedder.name)
        vectors.set_meta(conn, "embedding_dim", str(embedder.dim))

    _locked(conn, None, set_model)
    batches: deque[list[vectors.PendingChunk]] = deque()
    unreadable: list[BaseException] = []  # a store error is not the model's: it propagates

    def texts() -> Iterator[list[str]]:
        """The batches' texts, read as the embedder asks for them (one batch ahead)."""
        for start in range(0, len(todo), batch_size):
            try:
                batch = vectors.pending_texts(conn, todo[start : start + batch_size])
            except BaseException as exc:
                unreadable.append(exc)
                raise
            batches.append(batch)
            yield [passage_text(p.title, p.section, p.text) for p in batch]

    matrices = embed_document_batches(embedder, texts())
    while True:
        try:
            matrix = next(matrices, None)
        except Exception as exc:
            if unreadable:
                raise
            message = f"embedding stopped after {done} chunks: {exc}"
            if report is None:
                raise EmbedderUnavailable(message) from None
            report.warnings.append(message)
            break
        if matrix is None:
            break
        batch = batches.popleft()
        # Another writer may embed the same texts at once: the upsert keeps one vector per
        # (model, text), and a lost race (a deadlock) runs again.
        rows = list(zip((p.embed_hash for p in batch), matrix, strict=True))
        _locked(conn, None, partial(_store_batch, conn, embedder.name, rows))
        done += len(batch)
        if progress:
            progress(done, len(todo), "embedding")
    if report is not None:
        report.embedded += done
    rate = f"{done / max(time.monotonic() - started, 1e-9):.2f}"

    def finish() -> None:
        vectors.drop_orphans(conn)
        if done:  # the recent rate `tsm status` shows
            vectors.set_meta(conn, "embed_rate", rate)
            vectors.set_meta(conn, "embed_rate_at", dt.datetime.now().isoformat("T", "seconds"))

    _locked(conn, None, finish)
    if done and not vectors.pending(conn, embedder.name, 1):
        _store_noise_level(conn, embedder)
    return done


def _store_batch(conn: Connection, model: str, rows: list[tuple[str, np.ndarray]]) -> None:
    """One batch's vectors and the count of texts ever embedded, in one transaction."""
    vectors.store(conn, model, rows)
    vectors.add_to_meta(conn, EMBEDDED_TEXTS, len(rows))


def drop_orphan_vectors(conn: Connection) -> int:
    """The bookkeeping of an embedding run with nothing to embed (no model at hand)."""
    return _locked(conn, None, partial(vectors.drop_orphans, conn))
