"""Index maintenance that has to coordinate with the daemon: `reindex` without a daemon (run
in-process, in the foreground) and a DB backup. `rebuild` lives in daemon/rebuild.py."""

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
