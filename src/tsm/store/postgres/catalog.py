"""What `tsm status` and `tsm doctor` read of a PostgreSQL store beyond the shared SQL
(store/catalog.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import vectors

if TYPE_CHECKING:
    from ...config import Settings
    from ..connect import Connection
    from ..protocol import IndexReport, ServerInfo

# The keyword rows' table and its chunk id column.
keyword_table = ("chunk_keywords", "chunk_id")


def server_info(conn: Connection, settings: Settings) -> ServerInfo:
    version, extension, size = conn.execute(
        """SELECT current_setting('server_version'),
                  (SELECT extversion FROM pg_extension WHERE extname = 'vector'),
                  pg_database_size(current_database())"""
    ).fetchone()
    return settings.store_key, version, extension, int(size)


def quick_check(conn: Connection) -> tuple[str, ...]:
    """No file to check: the server keeps its own pages sound (index_report checks the
    indexes)."""
    return ()


def index_report(conn: Connection) -> IndexReport:
    """The indexes of the store's tables, those not valid or not ready, and each "model
    (dim)" with HNSW_MIN_ROWS vectors and no HNSW index."""
    indexes = conn.execute(
        """SELECT ic.relname, i.indisvalid AND i.indisready FROM pg_index i
           JOIN pg_class ic ON ic.oid = i.indexrelid
           JOIN pg_class tc ON tc.oid = i.indrelid
           JOIN pg_namespace n ON n.oid = tc.relnamespace
           WHERE n.nspname = current_schema() ORDER BY ic.relname"""
    ).fetchall()
    missing = tuple(
        f"{model} ({dim})"
        for model, dim in conn.execute(
            "SELECT DISTINCT model, dim FROM embeddings ORDER BY model, dim"
        ).fetchall()
        if not vectors.has_hnsw(conn, model, int(dim)) and vectors.hnsw_due(conn, model, int(dim))
    )
    return len(indexes), tuple(name for name, valid in indexes if not valid), missing
