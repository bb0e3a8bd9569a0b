"""Whether an SQLite index was made by tsm, for this user: `.tsm/tsm.db` is a file a cloned
repository can ship, with rows that match its notes' hashes but hold other text, and
triggers or views that run inside every later write.

An index tsm creates is sealed: `meta` holds a random `index_id` and an HMAC of it under a
key that lives in the user's own state dir (`$XDG_STATE_HOME/tsm/index-key`), which no
repository can ship. On open, before any row is read or any statement of ours runs against
it, the file's schema must be exactly the one tsm's migrations make (read from
`sqlite_master`, which a file cannot redefine) and its seal must verify. An index that
fails either is not used at all: `open_db` sets it aside and builds from the files.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from ... import locate, statedir
from ...errors import StorageFailure
from . import schema as sqlite_schema

KEY_FILE = "index-key"
_KEY_BYTES = 32
_SEAL_KEYS = ("index_id", "index_seal")


def key_file(environ: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME/tsm/index-key (an absolute one only), else ~/.local/state/tsm/."""
    xdg = environ.get("XDG_STATE_HOME", "")
    base = (
        xdg
        if os.path.isabs(xdg)
        else os.path.join(locate.expand_home("~", environ), ".local", "state")
    )
    return Path(base) / "tsm" / KEY_FILE


def user_key(environ: Mapping[str, str] | None = None) -> bytes:
    """The user's sealing key, made on first use: 32 random bytes in a 0600 file of a 0700
    folder. A new key is linked into place, so two processes making one at once agree.
    StorageFailure naming the file when it cannot be read or made."""
    path = key_file(os.environ if environ is None else environ)
    try:
        return _key(path)
    except OSError as exc:
        raise StorageFailure(
            f"cannot keep tsm's index key at {path}: {exc.strerror or exc}",
            "make that folder writable, or set XDG_STATE_HOME to a folder of your own",
        ) from None


def _key(path: Path) -> bytes:
    existing = _parsed(statedir.read_state_file(path, cap=1024))
    if existing is not None:
        return existing
    path.parent.mkdir(mode=statedir.PRIVATE_DIR, parents=True, exist_ok=True)
    statedir.private_dir(path.parent)
    temporary = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    statedir.write_private(temporary, secrets.token_hex(_KEY_BYTES).encode("ascii"))
    try:
        os.link(temporary, path)  # fails if another process made it first: use theirs
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)
    made = _parsed(statedir.read_state_file(path, cap=1024))
    if made is None:
        raise OSError("it holds no key tsm wrote (remove it: every index is then rebuilt)")
    return made


def _parsed(data: bytes | None) -> bytes | None:
    try:
        key = bytes.fromhex(data.strip().decode("ascii")) if data is not None else None
    except ValueError:  # not hex, or not ASCII
        return None
    return key if key is not None and len(key) == _KEY_BYTES else None


def seal(conn: sqlite3.Connection, key: bytes) -> None:
    """Mark the index being created as this user's (inside the creating transaction)."""
    index_id = secrets.token_hex(16)
    conn.executemany(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
        [("index_id", index_id), ("index_seal", _mac(key, index_id))],
    )


def _mac(key: bytes, index_id: str) -> str:
    return hmac.new(key, b"tsm index\0" + index_id.encode(), hashlib.sha256).hexdigest()


def is_new(conn: sqlite3.Connection) -> bool:
    """An empty file SQLite has just made (no schema, version 0): nothing to check yet."""
    return not _schema(conn) and _version(conn) == 0


def why_foreign(conn: sqlite3.Connection, key: bytes) -> str | None:
    """Why this index is not one tsm made here, or None when it is. Reads `sqlite_master`
    and the pragma first; rows of `meta` only once its definition is known to be ours."""
    version = _version(conn)
    schema = _schema(conn)
    latest = len(sqlite_schema.STEPS)
    if version > latest:
        expected_meta = reference_schema(latest)
        if not any(obj[1] == "meta" for obj in expected_meta & schema):
            return f"its schema version {version} is not one tsm wrote"
    else:
        expected = reference_schema(version)
        extra = sorted(schema - expected)
        if extra:
            kind, name = extra[0][0], extra[0][1]
            return f"it holds a {kind} tsm did not make ({name!r})"
        if expected - schema:
            return "its schema is not the one tsm makes"
    rows = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", _SEAL_KEYS).fetchall()
    )
    index_id, mark = rows.get("index_id"), rows.get("index_seal")
    if not isinstance(index_id, str) or not isinstance(mark, str):
        return "it carries no mark of this user's tsm (made elsewhere, or by an older tsm)"
    if not hmac.compare_digest(mark, _mac(key, index_id)):
        return "it was made by another user or on another machine"
    return None


SchemaObject = tuple[str, str, str, str]


def _schema(conn: sqlite3.Connection) -> set[SchemaObject]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(str(t), str(n), str(tb), _normal(s)) for t, n, tb, s in rows}


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _normal(sql: object) -> str:
    return " ".join(str(sql).split()) if sql is not None else ""


@functools.cache
def reference_schema(version: int) -> frozenset[SchemaObject]:
    """What tsm's first `version` migrations make, read back from a fresh in-memory DB."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for step in sqlite_schema.STEPS[:version]:
            step(conn)
        return frozenset(_schema(conn))
    finally:
        conn.close()
