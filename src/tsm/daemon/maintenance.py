"""Index maintenance that has to coordinate with the daemon: `reindex` without a daemon (run
in-process, in the foreground) and `rebuild` (stop the daemon, back up, rebuild from the
files, then carry unchanged vectors over from the backup so no text is embedded twice)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

from ..config import Settings
from ..indexing import Progress


def reindex_local(settings: Settings, target: str, progress: Progress | None) -> dict[str, Any]:
    """`tsm reindex` with no daemon: the same jobs, run here and waited for."""
    from ..backend import LocalBackend
    from .writer import drop_vectors, fts_batches, rebuild_fts

    backend = LocalBackend(settings)
    conn = backend.conn()
    out: dict[str, Any] = {"target": target, "background": False}
    if target in ("all", "fts"):
        batches = fts_batches(conn)
        for i, ids in enumerate(batches, start=1):
            rebuild_fts(settings, ids)(conn)
            if progress:
                progress(i, len(batches), "fts")
        out["fts_documents"] = sum(len(b) for b in batches)
    if target in ("all", "vectors"):
        out["vectors_dropped"] = drop_vectors(conn)
        out["embedded"] = backend.embed_pending(progress)
    return out


def backup(db_path: Path) -> Path:
    """Copy the DB with SQLite's online backup API (consistent even mid-write) to
    <db>.bak-<timestamp>; a DB too damaged for that is copied byte for byte."""
    from .. import statedir

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = db_path.with_name(f"{db_path.name}.bak-{stamp}")
    for path in (db_path, target):  # a link planted under either name is refused
        statedir.check_db_files(path)
    try:
        src = sqlite3.connect(db_path)
        with statedir.private_umask():  # born 0600, like the DB
            dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
    except sqlite3.DatabaseError:
        import shutil

        target.unlink(missing_ok=True)
        with statedir.private_umask():
            shutil.copyfile(db_path, target)
    statedir.tighten_db_files(target)
    return target


def rebuild_plan(settings: Settings) -> dict[str, Any]:
    from .client import daemon_state

    db = settings.db_path
    return {
        "apply": False, "db_path": str(db), "exists": db.exists(),
        "daemon": daemon_state(settings)["state"],
        "steps": [
            "stop the daemon if it runs (searches restart it afterwards)",
            f"back up {db} to {db.name}.bak-<timestamp> (SQLite backup API)",
            "delete the index and index every file again (keyword index first)",
            "copy vectors of unchanged text from the backup; embed the rest",
        ],
    }


def rebuild(settings: Settings, progress: Progress | None) -> dict[str, Any]:
    from ..backend import LocalBackend
    from .client import stop

    stopped = stop(settings)
    db = settings.db_path
    saved = backup(db) if db.exists() else None
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    backend = LocalBackend(settings)
    report = backend.index(embed=False, progress=progress)
    reused = _reuse_vectors(backend.conn(), saved) if saved else 0
    embedded = backend.embed_pending(progress)
    backend.close()
    return {"apply": True, "backup": str(saved) if saved else None,
            "daemon_stopped": stopped["stopped"], "indexed": report.indexed,
            "chunks": report.chunks, "vectors_reused": reused, "embedded": embedded,
            "warnings": report.warnings}


def _reuse_vectors(conn: sqlite3.Connection, saved: Path) -> int:
    """Vectors are keyed by (model, text hash): those of text still present are still right."""
    from ..store.connect import Transaction

    try:
        conn.execute("ATTACH DATABASE ? AS old", (str(saved),))
    except sqlite3.DatabaseError:
        return 0
    try:
        with Transaction(conn):
            before = conn.total_changes
            conn.execute(
                """INSERT OR IGNORE INTO embeddings(model, embed_hash, dim, vector)
                   SELECT model, embed_hash, dim, vector FROM old.embeddings
                   WHERE embed_hash IN (SELECT embed_hash FROM chunks)""")
            for key in ("model_name", "embedding_dim"):
                conn.execute("INSERT OR IGNORE INTO meta(key, value) "
                             "SELECT key, value FROM old.meta WHERE key = ?", (key,))
            return conn.total_changes - before
    except sqlite3.DatabaseError:
        return 0
    finally:
        conn.execute("DETACH DATABASE old")
