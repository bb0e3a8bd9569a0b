"""Opening the database: WAL, pragmas, migrations, and clear errors for missing/corrupt files."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import statedir
from ..errors import IndexCorrupt, UserError
from . import migrations


def open_db(path: Path, *, create: bool = False) -> sqlite3.Connection:
    """Open (and migrate) the index. `create=False` refuses to make a new, empty index."""
    statedir.check_db_files(path)  # SQLite itself would follow a symlinked DB
    if not path.exists():
        if not create:
            raise UserError(f"no index at {path}", "run `tsm index` (or `tsm init`) first")
        path.parent.mkdir(mode=statedir.PRIVATE_DIR, parents=True, exist_ok=True)
    try:
        with statedir.private_umask():  # a new DB is born 0600; its WAL and SHM copy its mode
            conn = sqlite3.connect(path, timeout=30.0, isolation_level=None,
                                   check_same_thread=False)
        statedir.tighten_db_files(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        migrations.apply(conn)
        return conn
    except sqlite3.DatabaseError as exc:
        raise IndexCorrupt(
            f"the index at {path} cannot be read: {exc}",
            "run `tsm rebuild --apply` to rebuild it from your notes",
        ) from None
    except OSError as exc:
        raise IndexCorrupt(f"cannot open the index at {path}: {exc}") from None


class Transaction:
    """`with Transaction(conn):` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def]
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Reads that must agree with each other (a change log and the rows it names): one read
    transaction, unless the caller already holds one."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if own:
            conn.execute("COMMIT")
