"""Opening the database: WAL, pragmas, migrations, and clear errors for missing/corrupt files."""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast

from .. import statedir
from ..errors import IndexCorrupt, StorageFailure, UserError
from . import failures, migrations
from .engine import store_of
from .sqlite import provenance

if TYPE_CHECKING:
    from ..config import Settings
    from .postgres.connection import PgConnection

_log = logging.getLogger(__name__)

Connection: TypeAlias = "sqlite3.Connection | PgConnection"
"""What every store function takes: an SQLite file, or a PostgreSQL server (store/postgres/)."""


def engine_name(conn: Connection) -> str:
    """The store's engine as an export file records it: "postgresql" or "sqlite"."""
    return store_of(conn).name


def open_store(settings: Settings, *, create: bool = False) -> Connection:
    """The index: the PostgreSQL server of `[store] url` when one is set, else the SQLite
    file at `settings.db_path`. Both come back migrated."""
    url = settings.store_url
    if not url:
        return open_db(settings.db_path, create=create)
    from . import scope
    from .postgres import connection as postgres

    conn = postgres.connect(url)
    try:
        migrations.apply(conn)
        conn.scope = scope.for_settings(settings)
        scope.claim(conn, conn.scope)
    except BaseException as exc:
        conn.close()
        if isinstance(exc, Exception) and postgres.is_server_error(exc):
            raise failures.postgres_error(exc, settings.store_key) from None
        raise
    return conn


def open_db(path: Path, *, create: bool = False, _set_aside: bool = False) -> sqlite3.Connection:
    """Open (and migrate) the index. `create=False` refuses to make a new, empty index.

    An index tsm did not make for this user (provenance.py) is never read: without
    `create` it is a user error; with it the file is set aside and a new one is made, for
    the caller (`tsm index`) to fill from the files."""
    statedir.check_db_files(path)  # SQLite itself would follow a symlinked DB
    if not path.exists():
        if not create:
            raise UserError(f"no index at {path}", "run `tsm index` (or `tsm init`) first")
        path.parent.mkdir(mode=statedir.PRIVATE_DIR, parents=True, exist_ok=True)
    else:
        refuse_empty(path)
    try:
        with statedir.private_umask():  # a new DB is born 0600; its WAL and SHM copy its mode
            conn = sqlite3.connect(
                path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
        statedir.tighten_db_files(path)
        # A DB tsm did not write (a cloned repo's .tsm) must not run SQL functions from
        # its own views or triggers; tsm's schema uses none.
        conn.execute("PRAGMA trusted_schema=OFF")
        key = provenance.user_key()
        problem = None if provenance.is_new(conn) else provenance.why_foreign(conn, key)
        if problem is not None:
            conn.close()
            return _not_ours(path, problem, create=create, set_aside_before=_set_aside)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        migrations.apply(
            conn, on_create=lambda c: provenance.seal(cast(sqlite3.Connection, c), key)
        )
        return conn
    except sqlite3.Error as exc:
        raise failures.sqlite_error(exc, path, opening=True) from None
    except OSError as exc:
        raise IndexCorrupt(f"cannot open the index at {path}: {exc}") from None


def _not_ours(
    path: Path, problem: str, *, create: bool, set_aside_before: bool
) -> sqlite3.Connection:
    """A cloned repository's `.tsm/tsm.db` (or another user's): its rows could show text
    that is in no file and its triggers run in our writes, so none of it is read. Vectors
    are not kept either: checking one means computing it again."""
    message = f"the index at {path} was not made by tsm for you on this machine: {problem}"
    if not create or set_aside_before:
        raise UserError(
            message + "; nothing in it is used",
            "run `tsm index`: it sets the file aside and builds the index from your files",
        )
    aside = set_aside(path)
    _log.warning("%s; set aside as %s, building a new one from the files", message, aside)
    return open_db(path, create=True, _set_aside=True)


def set_aside(path: Path) -> Path:
    """Rename the DB and its WAL/SHM to `<db>.foreign-<time>` (kept for the user to look
    at), under a lock on the state dir so two processes do not both move files."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.foreign-{stamp}-{os.getpid()}")
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if not path.exists():
            return aside  # another process moved it first
        for suffix in ("-wal", "-shm", "-journal", ""):  # the DB last: never a DB without its WAL
            companion = Path(f"{path}{suffix}")
            if os.path.lexists(companion):
                os.rename(companion, Path(f"{aside}{suffix}"))
    finally:
        os.close(folder)  # releases the lock
    return aside


def refuse_empty(path: Path) -> None:
    """A zero-byte file is not an empty index: SQLite would silently make it one, hiding a
    truncated or lost DB. A DB being created by another process is 0 bytes for a moment
    (connect, then the first write), so look again briefly before calling it corrupt."""
    for _ in range(5):
        try:
            if path.stat().st_size > 0:
                return
        except OSError:
            return  # vanished meanwhile: sqlite3.connect reports what is wrong
        time.sleep(0.05)
    raise IndexCorrupt(
        f"the index at {path} is empty (0 bytes): it is not a database", failures.REBUILD_HINT
    )


class Transaction:
    """`with Transaction(conn):` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error. Inside
    `grouped(conn)` on SQLite it is a part of the group's transaction instead."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._group = _groups.get(id(conn))
        self._changes = 0

    def __enter__(self) -> Connection:
        if self._group is not None:
            self._changes = self._group.enter()
        else:
            self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def]
        if self._group is not None:
            self._group.leave(failed=exc_type is not None, changes_before=self._changes)
        elif exc_type is None:
            self.conn.execute("COMMIT")
        else:
            rollback(self.conn)


# How long one grouped transaction stays open at most (`grouped`): another writer (the
# daemon, a hook re-indexing a note) waits for it at most about this long.
GROUP_SECONDS = 0.5


class _Group:
    """The transaction that `grouped` keeps open across several `Transaction`s."""

    def __init__(self, conn: sqlite3.Connection, seconds: float) -> None:
        self.conn, self.seconds, self.opened = conn, seconds, 0.0

    def enter(self) -> int:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.opened = time.monotonic()
        return self.conn.total_changes

    def leave(self, *, failed: bool, changes_before: int) -> None:
        if failed:
            # A part that wrote nothing before it failed (a file that changed meanwhile)
            # leaves the group whole; one that wrote cannot be undone alone (a savepoint
            # would make FTS5 write its pending terms out, the cost this saves), so the
            # group's other parts go with it and the error stops the run.
            if self.conn.total_changes != changes_before:
                rollback(self.conn)
            return
        if time.monotonic() - self.opened >= self.seconds:
            self.commit()

    def commit(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")


_groups: dict[int, _Group] = {}


@contextmanager
def grouped(conn: Connection, seconds: float = GROUP_SECONDS) -> Iterator[None]:
    """Fold the `Transaction`s made on `conn` inside this block into one SQLite transaction
    committed every `seconds` (and at the end), for a writer storing many documents one
    transaction each: each commit writes the WAL's pages again and FTS5 its pending terms
    as a new segment that later merges rewrite, so one commit per document costs more than
    the document. Every commit still holds whole documents only. On PostgreSQL each stays
    its own transaction: its writers lock the paths they write (store/documents.py), and
    a group would hold those locks for every document in it."""
    if not isinstance(conn, sqlite3.Connection) or id(conn) in _groups:
        yield
        return
    group = _groups[id(conn)] = _Group(conn, seconds)
    try:
        yield
    finally:
        del _groups[id(conn)]
        try:
            group.commit()  # what is whole is kept, as one transaction per document kept it
        except BaseException:
            rollback(conn)
            raise


def pipelined(conn: Connection) -> AbstractContextManager[None]:
    """A whole transaction's statements sent without waiting for each one's result, on
    PostgreSQL (PgConnection.pipelined); SQLite has no round trips to save."""
    if isinstance(conn, sqlite3.Connection):
        return nullcontext()
    return conn.pipelined()


def rollback(conn: Connection) -> None:
    """Undo an open transaction; none may be open (SQLite already rolled back after a full
    disk, or the failure came before BEGIN)."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


@contextmanager
def read_snapshot(conn: Connection) -> Iterator[Connection]:
    """Reads that must agree with each other (a change log and the rows it names): one read
    transaction, unless the caller already holds one. On PostgreSQL it is REPEATABLE READ:
    its default, READ COMMITTED, gives each statement a snapshot of its own."""
    own = not conn.in_transaction
    if own:
        conn.execute(store_of(conn).dialect.begin_snapshot)
    try:
        yield conn
    finally:
        if own:
            conn.execute("COMMIT")


@contextmanager
def attached(conn: sqlite3.Connection, path: Path, schema: str = "old") -> Iterator[str]:
    """Another DB file attached to `conn` as `schema` (its tables read as `schema.table`),
    detached afterwards. `schema` is a name of ours, never user input: it is spliced in."""
    conn.execute(f"ATTACH DATABASE ? AS {schema}", (str(path),))
    try:
        yield schema
    finally:
        conn.execute(f"DETACH DATABASE {schema}")


def leave_wal(conn: sqlite3.Connection) -> None:
    """Fold the WAL into the DB file and switch to a rollback journal, so the DB is one file
    (that a rename can move); the next open_db switches it back to WAL."""
    conn.execute("PRAGMA journal_mode=DELETE")


def release_wal(path: Path, busy_hint: str) -> None:
    """leave_wal for a DB file nobody here has open (not migrated, maybe damaged). SQLite
    allows it only when no other connection has the file open: StorageFailure (with
    `busy_hint`) when one does. A damaged or unopenable file is left as it is."""
    try:
        conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    except sqlite3.Error:
        return
    try:
        leave_wal(conn)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise StorageFailure(
                f"another process has the index at {path} open ({exc})", busy_hint
            ) from None
    except sqlite3.DatabaseError:
        pass  # damaged: the caller deals with it as it is
    finally:
        conn.close()


def rebuild_path(db: Path) -> Path:
    """Where `tsm rebuild` builds the new index, beside the old one: <db>.rebuild."""
    return db.with_name(db.name + ".rebuild")
