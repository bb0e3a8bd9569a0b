"""Index maintenance that has to coordinate with the daemon: `reindex` without a daemon (run
in-process, in the foreground). `rebuild` lives in daemon/rebuild.py."""

from __future__ import annotations

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
