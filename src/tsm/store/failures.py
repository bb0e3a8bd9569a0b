"""SQLite, PostgreSQL and file-system errors → TsmErrors with one clear line that names the
index (the SQLite file, or the server's URL without its password).

The interfaces' error boundaries (cli/main.py, the daemon's dispatch, the MCP tools) call
`translate` once with `settings.store_key`, so no command needs its own `except
sqlite3.OperationalError` or psycopg handler. psycopg is never imported here: its errors are
told apart by their SQLSTATE (store/postgres/connection.py imports it, and only for a server store).
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from ..errors import IndexCorrupt, StorageFailure, TsmError

REBUILD_HINT = (
    "run `tsm rebuild --apply`: it rebuilds the index from your files beside the "
    "old one and keeps a backup"
)

# SQLite primary result codes (https://sqlite.org/rescode.html); extended codes keep them in
# their low byte.
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR = 5, 6, 8, 10
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 11, 13, 14, 26
SQLITE_PERM = 3
SQLITE_IOERR_WRITE = SQLITE_IOERR | 3 << 8  # a failed write(): ENOSPC's cousins, EFBIG, EIO


def translate(exc: BaseException, db_path: Path | str | None = None) -> TsmError | None:
    """The TsmError for a SQLite, PostgreSQL or OS error (None for anything else, which stays
    a bug). `db_path` names the index: `settings.store_key`."""
    if isinstance(exc, sqlite3.Error):
        return sqlite_error(exc, db_path)
    if _is_server_error(exc):
        return postgres_error(exc, db_path)
    if isinstance(exc, OSError) and exc.errno is not None:
        return os_error(exc)
    if isinstance(exc, _VALUE_ERRORS) and db_path is not None:
        return misshapen_index(db_path)
    return None


# What a value of a type tsm never stores fails with, deep in any command: a title that is a
# BLOB (TypeError in normalize()), a timestamp past year 9999 (OverflowError), an
# embedding_dim that is no number (ValueError).
_VALUE_ERRORS = (TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError)

# Each column's types as tsm writes them (SQLite's typeof); NULL only where listed.
_COLUMN_TYPES: dict[str, dict[str, tuple[str, ...]]] = {
    "documents": {
        "id": ("integer",),
        "path": ("text",),
        "type": ("text",),
        "title": ("text",),
        "content_hash": ("text",),
        "size": ("integer",),
        "mtime": ("real", "integer"),
        "category": ("text",),
        "status": ("text", "null"),
        "created": ("text", "null"),
        "updated": ("text", "null"),
        "doc_date": ("text", "null"),
        "date_source": ("text", "null"),
        "aliases": ("text",),
        "text": ("text",),
        "indexed_at": ("real", "integer"),
    },
    "chunks": {
        "document_id": ("integer",),
        "chunk_index": ("integer",),
        "section": ("text",),
        "page": ("integer", "null"),
        "line": ("integer", "null"),
        "chunk_date": ("text", "null"),
        "text": ("text",),
        "embed_hash": ("text",),
    },
    "tags": {"document_id": ("integer",), "tag": ("text",)},
    "links": {
        "document_id": ("integer",),
        "target": ("text",),
        "link_type": ("text",),
        "target_key": ("text",),
    },
    "names": {"document_id": ("integer",), "name": ("text",), "kind": ("text",)},
    "embeddings": {
        "model": ("text",),
        "embed_hash": ("text",),
        "dim": ("integer",),
        "vector": ("blob",),
    },
    "meta": {"key": ("text",), "value": ("text", "null")},
}
_TIMESTAMP_LIMIT = 253_402_300_799  # 9999-12-31T23:59:59Z: the last second datetime can show


def misshapen_index(db_path: Path | str) -> TsmError | None:
    """IndexCorrupt naming the first value of the SQLite index at `db_path` that tsm never
    writes (a column of another type, a timestamp no date can show, an embedding_dim that
    is no number), or None when it holds none (or is no SQLite file: a server's URL).

    Asked only once a command has failed with such a value's error: an index is a file a
    cloned repository can ship, or a damaged one, and checking every value every read would
    cost every search what only a broken index needs."""
    path = Path(db_path)
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA trusted_schema=OFF")
        problem = _misshapen_value(conn)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if problem is None:
        return None
    return IndexCorrupt(
        f"the index {path} is damaged or was not written by tsm: {problem}", REBUILD_HINT
    )


def _misshapen_value(conn: sqlite3.Connection) -> str | None:
    for table, columns in _COLUMN_TYPES.items():
        for column, types in columns.items():
            allowed = ", ".join(f"'{t}'" for t in types)
            row = conn.execute(
                f"SELECT typeof({column}) FROM {table} "  # noqa: S608 (names are ours)
                f"WHERE typeof({column}) NOT IN ({allowed}) LIMIT 1"
            ).fetchone()
            if row is not None:
                return f"{table}.{column} holds a value of type {row[0]}"
    for column in ("mtime", "indexed_at"):
        row = conn.execute(
            f"SELECT path FROM documents WHERE abs({column}) > ? LIMIT 1",  # noqa: S608
            (_TIMESTAMP_LIMIT,),
        ).fetchone()
        if row is not None:
            return f"documents.{column} of {row[0]!r} is no time a date can show"
    row = conn.execute(
        "SELECT model FROM embeddings WHERE length(vector) != dim * 4 LIMIT 1"
    ).fetchone()
    if row is not None:
        return f"a vector of {str(row[0])[:80]!r} does not hold its dim float32 values"
    row = conn.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
    if row is not None and row[0] is not None and not str(row[0]).isdecimal():
        return f"its embedding_dim {str(row[0])[:40]!r} is no number"
    return None


def sqlite_error(
    exc: sqlite3.Error, db_path: Path | str | None = None, *, opening: bool = False
) -> TsmError:
    """`opening`: the error came from opening and migrating the DB, where anything that is
    not a disk, permission or lock problem means the file is not a sound index."""
    where = f"the index at {db_path}" if db_path else "the index"
    detail = str(exc) or type(exc).__name__
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == SQLITE_FULL:
        return StorageFailure(
            f"the disk is full: cannot write {where} ({detail})",
            "free some space and run the command again; the index keeps its last complete state",
        )
    if code in (SQLITE_READONLY, SQLITE_PERM):
        folder = Path(db_path).parent if db_path else "its folder"
        return StorageFailure(
            f"{where} is read-only ({detail})",
            f"make the file and {folder} writable (SQLite also writes the "
            "-wal and -shm files beside it)",
        )
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return StorageFailure(
            f"{where} is locked by another process ({detail})",
            "wait for the other tsm command or the daemon to finish "
            "(`tsm stop` stops the daemon), then run this again",
        )
    if (
        code in (SQLITE_CORRUPT, SQLITE_NOTADB)
        or isinstance(exc, sqlite3.DatabaseError)
        and "malformed" in detail
    ):
        return IndexCorrupt(f"{where} is damaged ({detail})", REBUILD_HINT)
    if code == SQLITE_IOERR and getattr(exc, "sqlite_errorcode", 0) == SQLITE_IOERR_WRITE:
        return StorageFailure(
            f"cannot write {where}: the disk may be full or failing ({detail})",
            "check the disk and its free space, then run "
            "the command again; the index keeps its last complete state",
        )
    if code == SQLITE_IOERR:
        return StorageFailure(
            f"disk I/O error on {where} ({detail})",
            "check the disk and its free space, then `tsm doctor`",
        )
    if code == SQLITE_CANTOPEN:
        return StorageFailure(
            f"cannot open {where} ({detail})",
            "check that the file and its folder exist and are readable and writable",
        )
    if opening:
        return IndexCorrupt(f"{where} cannot be read ({detail})", REBUILD_HINT)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    return StorageFailure(
        f"SQLite error on {where}: {detail} ({name})", "run `tsm doctor` to check the index"
    )


def os_error(exc: OSError) -> TsmError:
    target = exc.filename or "a file"
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return StorageFailure(
            f"the disk is full: cannot write {target} ({reason})",
            "free some space and run the command again",
        )
    if exc.errno == errno.EROFS:
        return StorageFailure(f"{target} is on a read-only file system", None)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StorageFailure(
            f"permission denied: {target}", "check the permissions of the file and its folder"
        )
    return StorageFailure(f"cannot access {target}: {reason}", None)


# SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html) of a transaction
# that lost a race with another writer: run again, it succeeds (indexing.py retries them).
PG_RETRYABLE = {
    "40001": "serialization failure",
    "40P01": "deadlock",
    "23505": "unique violation",
}
PG_QUERY_CANCELED = "57014"
PG_READ_ONLY = "25006"
PG_NO_PRIVILEGE = "42501"
PG_LOCK_NOT_AVAILABLE = "55P03"
# Classes: 08 connection exception, 57 operator intervention (admin or crash shutdown, the
# server starting up), 53 insufficient resources (disk full, out of memory), 58 system
# error (I/O), XX internal error (data corrupted).
PG_GONE_CLASSES = ("08", "57")


def retryable(exc: BaseException) -> bool:
    """Whether `exc` is a PostgreSQL transaction that lost a race with another writer (a
    deadlock, a serialization failure, a unique key two writers inserted at once): the
    transaction was rolled back, and running it again is the cure."""
    return _is_server_error(exc) and getattr(exc, "sqlstate", None) in PG_RETRYABLE


def _is_server_error(exc: BaseException) -> bool:
    # Imported here, on a failure: the PostgreSQL store's modules are no cost of a command
    # that uses SQLite.
    from .postgres.connection import is_server_error

    return is_server_error(exc)


def postgres_error(exc: BaseException, store: Path | str | None = None) -> TsmError:
    """A psycopg error as one line naming the store (its URL without the password). Every
    one is a system error (exit 2): a wrong URL or password is caught when connecting
    (store/postgres.connect, a user error); what fails later is the server, or tsm."""
    where = f"the PostgreSQL store at {store}" if store else "the PostgreSQL store"
    state = getattr(exc, "sqlstate", None) or ""
    detail = _pg_detail(exc)
    again = "run the command again; the index keeps its last complete state"
    if _connection_lost(exc, state):
        return StorageFailure(
            f"lost the connection to {where} ({detail})",
            "check that the server is running and reachable, then run the command again; "
            "the next `tsm index` completes the index",
        )
    if state == PG_QUERY_CANCELED:
        return StorageFailure(f"a query on {where} was cancelled ({detail})", again)
    if state in PG_RETRYABLE or state == PG_LOCK_NOT_AVAILABLE:
        return StorageFailure(
            f"another writer kept a conflicting lock on {where} ({detail})", again
        )
    if state == PG_READ_ONLY:
        return StorageFailure(
            f"{where} is read-only ({detail})",
            "point store.url (or TSM_STORE_URL) at the primary server, not a replica",
        )
    if state == PG_NO_PRIVILEGE:
        return StorageFailure(
            f"the role in store.url lacks a privilege on {where} ({detail})",
            "grant the role the privileges on its database, or use the database's owner",
        )
    if state.startswith("53"):
        return StorageFailure(
            f"the server of {where} is out of resources ({detail})",
            "free disk space or memory on the server, then " + again,
        )
    if state.startswith(("58", "XX")):
        return StorageFailure(
            f"the server of {where} failed ({detail})",
            "check the server's log; then `tsm doctor`",
        )
    return StorageFailure(
        f"PostgreSQL error on {where}: {detail} ({state or type(exc).__name__})",
        "run `tsm doctor` to check the index",
    )


def _connection_lost(exc: BaseException, state: str) -> bool:
    """The server went away or refused the session: a connection-class SQLSTATE, or none at
    all from psycopg's OperationalError/InterfaceError (libpq found the socket closed)."""
    if state:
        return state.startswith(PG_GONE_CLASSES) and state != PG_QUERY_CANCELED
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"OperationalError", "InterfaceError"})


def _pg_detail(exc: BaseException) -> str:
    """The server's own message when it sent one, else libpq's first line (a lost connection
    says why first, then adds lines of guesses)."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    if primary:
        return str(primary).strip()[:300]
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]
