"""SQLite and file-system errors → TsmErrors with one clear line that names the file.

The interfaces' error boundaries (cli/main.py, the daemon's dispatch, the MCP tools) call
`translate` once, so no command needs its own `except sqlite3.OperationalError`.
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
    """The TsmError for a SQLite or OS error (None for anything else, which stays a bug)."""
    if isinstance(exc, sqlite3.Error):
        return sqlite_error(exc, db_path)
    if isinstance(exc, OSError) and exc.errno is not None:
        return os_error(exc)
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
