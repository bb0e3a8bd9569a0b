"""What `tsm status` and `tsm doctor` read of an SQLite file beyond the shared SQL
(store/catalog.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config import Settings
    from ..connect import Connection
    from ..protocol import IndexReport, ServerInfo

# The keyword rows' table and its chunk id column.
keyword_table = ("chunks_fts", "rowid")


def server_info(conn: Connection, settings: Settings) -> ServerInfo:
    """No server: only the size of the file and its write-ahead log."""
    return None, None, None, db_size(settings.db_path)


def db_size(path: Path) -> int:
    """Bytes of the DB file and its write-ahead log."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def quick_check(conn: Connection) -> tuple[str, ...]:
    """The lines of PRAGMA quick_check (seconds on a large index): ("ok",) for a sound file."""
    return tuple(line for (line,) in conn.execute("PRAGMA quick_check"))


def index_report(conn: Connection) -> IndexReport:
    """Nothing beyond quick_check, which covers the file's indexes too."""
    return 0, (), ()
