"""`tsm rebuild`: a new index built beside the old one and swapped in by one rename.

Until the rename the old DB is untouched, so a full disk, an interrupt or a crash leaves
it exactly as it was; after it, the old file stays as `<db>.bak-<timestamp>` (a hard
link made just before the rename: no copy, no extra disk space). Transcripts outside the
root are ingested again from where they were; one that is gone keeps its old rows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from ..config import Settings
from ..errors import StorageFailure, TsmError, UserError
from ..indexing import IndexReport, Progress
from ..store import documents, vectors
from ..store.connect import Transaction, attached, leave_wal, rebuild_path, release_wal


def refuse_server_store(settings: Settings) -> None:
    """A rebuild swaps one SQLite file for another; a PostgreSQL store is shared by a team
    and has no file to swap."""
    if settings.store_url:
        raise UserError(
            "`tsm rebuild` rebuilds the SQLite index file; this index is on PostgreSQL "
            f"({settings.store_key})",
            "run `tsm index` to bring it up to date, or `tsm reindex` to redo its keyword rows",
        )


def plan(settings: Settings, daemon_state: str) -> dict[str, Any]:
    """What `rebuild --apply` would do (the dry run); `daemon_state` as client.lifecycle
    reports it."""
    refuse_server_store(settings)
    db = settings.db_path
    return {
        "apply": False,
        "db_path": str(db),
        "exists": db.exists(),
        "daemon": daemon_state,
        "steps": [
            "stop the daemon if it runs (searches restart it afterwards)",
            f"build a new index in {rebuild_path(db).name} beside the old one, from your "
            "files and every session transcript the old index knows",
            "keep the old rows of transcripts that can no longer be read",
            "copy vectors of unchanged text from the old index",
            f"swap it in with one rename; the old index stays as {db.name}.bak-<timestamp>",
            "embed the text that has no vector yet",
        ],
    }


def rebuild(settings: Settings, progress: Progress | None, daemon: DaemonControl) -> dict[str, Any]:
    """Rebuild, swap, embed. On any failure before the swap the old DB is as it was and the
    error (a TsmError) says so, with `details["backup"]` naming where the old index is."""
    refuse_server_store(settings)
    stopped = daemon.stop()
    db = settings.db_path
    new = rebuild_path(db)
    with _exclusive(daemon), _terminate_as_interrupt():
        backup: Path | None = None
        swapped = False
        try:
            built = _build(settings, new, progress)
            if db.exists():
                _release_wal(db)
            with _signals_held():  # Ctrl-C waits until the swap is whole (or undone)
                backup = _swap(db, new)
                swapped = True
        except BaseException as exc:
            if swapped:  # interrupted right after the swap: the rebuilt index is in place
                error = UserError(
                    "interrupted after the rebuilt index was swapped in",
                    "`tsm index` embeds what has no vector yet",
                )
                error.details = {"backup": str(backup) if backup else None}
                raise error from exc
            _remove_db_files(new)
            raise _failed(exc, db, new) from exc
    result = {
        "apply": True,
        "backup": str(backup) if backup else None,
        "daemon_stopped": stopped["stopped"],
        **built,
    }
    result["embedded"] = _embed(settings, result["warnings"], progress)
    return result


def _build(settings: Settings, new: Path, progress: Progress | None) -> dict[str, Any]:
    from ..store.connect import open_db
    from .jobs import IndexJob, run

    _remove_db_files(new)  # left by a rebuild that was killed: we hold the lock
    old = settings.db_path if settings.db_path.exists() else None
    known, old_problem = _known_sessions(old) if old else ([], None)
    building = dataclasses.replace(settings, db_path=new)
    conn = open_db(new, create=True)  # refuse_server_store let no server store through
    try:
        report = run(IndexJob(embed=False), building, conn, None, progress)
        sessions = _restore_sessions(building, conn, known, old, report)
        reused = _reuse_vectors(conn, old) if old and not old_problem else 0
        leave_wal(conn)  # fold the WAL in: one file to rename
    finally:
        conn.close()
    warnings = list(report.warnings)
    if old_problem:
        warnings.append(
            f"the old index could not be read ({old_problem}): transcripts it "
            "knew that are not in sessions.dirs could not be found again"
        )
    return {
        "indexed": report.indexed,
        "chunks": report.chunks,
        "vectors_reused": reused,
        "sessions": sessions,
        "skipped": report.skipped,
        "warnings": warnings,
    }


def _known_sessions(old: Path) -> tuple[list[str], str | None]:
    """Stored paths of every transcript in the old index, or why it cannot be read."""
    from ..store.connect import open_db

    try:
        conn = open_db(old)
    except TsmError as exc:
        return [], exc.message
    try:
        return documents.session_paths(conn), None
    except sqlite3.DatabaseError as exc:
        return [], str(exc)
    finally:
        conn.close()


def transcript_path(settings: Settings, key: str) -> Path:
    """Where a transcript stored as `key` lives (the inverse of indexing.session_key)."""
    if key.startswith("~/"):
        return Path.home() / key[2:]
    if key.startswith("/"):
        return Path(key)
    return settings.index_root / PurePosixPath(key)


def _restore_sessions(
    settings: Settings,
    conn: sqlite3.Connection,
    known: list[str],
    old: Path | None,
    report: IndexReport,
) -> dict[str, Any]:
    """Ingest every transcript the old index knew that the file walk did not bring back
    (ingest-session puts them anywhere); keep the old rows of those that cannot be read."""
    from ..indexing import ingest_session

    reingested, kept = [], []
    for key in known:
        if documents.stored_file(conn, key) is not None:
            continue  # found again by the walk (sessions.dirs or inside the root)
        path = transcript_path(settings, key)
        reason = "the file is gone"
        if not settings.trusted and not _inside_root(settings, path):
            # The old index is a file in the state dir, which a cloned repository can ship:
            # in a root the user never trusted, its keys must not name files to read (a
            # planted key read another project's transcript into this index).
            reason = (
                "outside the index root, which is not trusted (`tsm trust` lets a rebuild "
                "read it again)"
            )
        elif path.is_file():
            try:
                ingested = ingest_session(settings, conn, path)
                report.warnings += ingested.warnings
                reason = "; ".join(s["reason"] for s in ingested.skipped) or "not indexed"
            except UserError as exc:
                reason = exc.message
            except OSError as exc:
                reason = exc.strerror or str(exc)
            if documents.stored_file(conn, key) is not None:
                reingested.append(key)
                continue
        assert old is not None
        if _copy_from_old(conn, old, key):
            kept.append({"path": key, "reason": reason})
    return {"known": len(known), "reingested": reingested, "kept_from_old_index": kept}


def _inside_root(settings: Settings, path: Path) -> bool:
    """Whether `path`, every link followed, lies inside the index root."""
    root = os.path.realpath(settings.index_root)
    return os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep)


def _copy_from_old(conn: sqlite3.Connection, old: Path, key: str) -> bool:
    with attached(conn, old) as schema, Transaction(conn):
        return documents.copy_document(conn, schema, key)


def _reuse_vectors(conn: sqlite3.Connection, old: Path) -> int:
    """Vectors are keyed by (model, text hash): those of text still present are still right."""
    with attached(conn, old) as schema, Transaction(conn):
        return vectors.copy_reusable(conn, schema)


def _swap(db: Path, new: Path) -> Path | None:
    """Put `new` in place of `db` with one rename; the old file stays as the backup. On
    failure nothing is replaced (a backup name made for it is removed again)."""
    if not db.exists():
        os.replace(new, db)
        return None
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    linked = True
    for n in range(1, 100):  # two rebuilds within a second get two backups
        backup = db.with_name(f"{db.name}.bak-{stamp}" + (f"-{n}" if n > 1 else ""))
        if backup.exists():
            continue
        try:
            os.link(db, backup)  # a second name for the old file: no copy, no space
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links: rename, a moment without a DB
            os.rename(db, backup)
            linked = False
        break
    else:
        raise StorageFailure(f"too many backups named {db.name}.bak-{stamp}*", "remove old backups")
    try:
        os.replace(new, db)
    except BaseException:  # the old file keeps its one name, untouched
        if linked:
            backup.unlink()
        else:
            os.rename(backup, db)
        raise
    for suffix in ("-wal", "-shm"):  # a damaged old DB's companions go with its backup
        companion = Path(f"{db}{suffix}")
        if companion.exists():
            os.replace(companion, Path(f"{backup}{suffix}"))
    return backup


def _release_wal(db: Path) -> None:
    """Fold the old DB's WAL into it and leave WAL mode: a WAL left beside the new file would
    be read as its own. A damaged old DB is swapped out as it is."""
    release_wal(
        db,
        "close it (an MCP server, a search in progress) and run `tsm rebuild --apply` again",
    )


def _embed(settings: Settings, warnings: list[str], progress: Progress | None) -> int:
    """Embed what the old index had no vector for, in the swapped-in index; a failure here
    loses nothing (keyword search works, `tsm index` embeds the rest later)."""
    from ..embed import get_embedder
    from ..store.connect import open_store
    from ..store.failures import translate
    from .jobs import EmbedJob, run

    conn = None
    try:
        embedder = get_embedder(settings.embedder)
        if embedder is None:
            return 0
        conn = open_store(settings)
        return int(run(EmbedJob(), settings, conn, embedder, progress))
    except Exception as exc:
        error = exc if isinstance(exc, TsmError) else translate(exc, settings.db_path)
        if error is None:
            raise
        warnings.append(
            f"embedding stopped: {error.message}; the rebuilt index is in place "
            "and `tsm index` embeds the rest"
        )
        return 0
    finally:
        if conn is not None:
            conn.close()


def _failed(exc: BaseException, db: Path, new: Path) -> TsmError:
    """The error to show: what went wrong, and that the old index is untouched."""
    from ..store.failures import translate

    unchanged = f"nothing was replaced: the index at {db} is as it was (it is the backup)"
    if isinstance(exc, KeyboardInterrupt):
        error: TsmError = UserError("rebuild interrupted", unchanged)
    else:
        known = exc if isinstance(exc, TsmError) else translate(exc, new)
        if known is None:
            known = StorageFailure(
                f"unexpected {type(exc).__name__}: {exc}", "rerun with TSM_DEBUG=1 and report it"
            )
        hint = unchanged + (f"; {known.hint}" if known.hint else "")
        error = type(known)(f"rebuild failed: {known.message}", hint)
    error.details = {"backup": str(db), "index_unchanged": True}
    return error


class DaemonControl(Protocol):
    """What a rebuild needs of the daemon's lifecycle (client/lifecycle.py provides it)."""

    def stop(self) -> dict[str, Any]: ...

    def acquire_lock(self) -> int | None: ...


@contextmanager
def _exclusive(daemon: DaemonControl) -> Iterator[None]:
    """Hold the daemon's instance lock: no daemon starts on the old DB while we swap it."""
    fd = daemon.acquire_lock()
    if fd is None:
        raise StorageFailure(
            "a daemon started while the rebuild began",
            "run `tsm stop`, then `tsm rebuild --apply` again",
        )
    try:
        yield
    finally:
        os.close(fd)


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM cleans up like Ctrl-C (the half-built file is removed), then exits."""
    try:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the files are renamed, so an interrupt never falls
    between the backup's link and the rename; they are delivered right after."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError):  # no pthread_sigmask on this platform
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _remove_db_files(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
