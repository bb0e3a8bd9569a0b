"""PostgreSQL as the store: a connection that speaks the store modules' SQL.

The store modules write one SQL text for both engines wherever the two agree (`?`
placeholders, `RETURNING`, `ON CONFLICT`); `PgConnection` turns it into psycopg's form and
offers the few members of `sqlite3.Connection` they use. What differs (the keyword index,
vector storage, locks) is this package's side of the Store protocol (store/protocol.py).

psycopg is imported here only, when a `[store] url` is set: the SQLite path never loads it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from ...config import check_store_url
from ...config import redacted_url as redacted
from ...errors import ConfigError, StorageFailure

if TYPE_CHECKING:
    import psycopg

    from ..scope import Scope

SETTING = "store.url (or TSM_STORE_URL)"

# `?` outside quoted text; our SQL never puts `?` or `%` inside its string literals, but a
# `%` in a LIKE pattern literal would be read as a placeholder, so it is doubled.
_MARK = re.compile(r"\?|%")
FETCH_BATCH = 1000  # rows made into tuples at once when a result is iterated


def _translate(sql: str) -> str:
    return _MARK.sub(lambda m: "%s" if m.group() == "?" else "%%", sql)


class PgCursor:
    """The part of sqlite3.Cursor the store uses: iteration, fetchone/fetchall, rowcount.

    Sent inside PgConnection.pipelined, a statement's result arrives only when the pipeline
    syncs: reading it (rows, rowcount) syncs first, so the caller waits where it needs the
    answer and nowhere else."""

    def __init__(self, cursor: psycopg.Cursor[Any], pipeline: psycopg.Pipeline | None) -> None:
        self._cursor = cursor
        self._pipeline = pipeline

    def _ready(self) -> psycopg.Cursor[Any]:
        if self._pipeline is not None and self._cursor.pgresult is None:
            self._pipeline.sync()
        return self._cursor

    def fetchone(self) -> Any:
        cursor = self._ready()
        return cursor.fetchone() if cursor.description else None

    def fetchall(self) -> list[Any]:
        cursor = self._ready()
        return cursor.fetchall() if cursor.description else []

    def __iter__(self) -> Iterator[Any]:
        cursor = self._ready()
        return _batches(cursor) if cursor.description else iter(())

    @property
    def rowcount(self) -> int:
        return self._ready().rowcount


def _batches(cursor: psycopg.Cursor[Any]) -> Iterator[Any]:
    """The rows, made into tuples a batch at a time: psycopg's own iterator makes each row
    through several Python calls, which cost more client time than the server spent on a
    ranking of a few hundred rows; a batch bounds the memory of a large result."""
    while rows := cursor.fetchmany(FETCH_BATCH):
        yield from rows


class PgConnection:
    """A psycopg connection in autocommit mode, so that the store's explicit `BEGIN` …
    `COMMIT` statements delimit transactions exactly as they do on SQLite."""

    def __init__(self, conn: psycopg.Connection[Any], url: str) -> None:
        self.raw = conn
        self.url = url
        self.total_changes = 0  # rows written, like sqlite3.Connection.total_changes
        self._pipeline: psycopg.Pipeline | None = None
        self._sent: list[psycopg.Cursor[Any]] = []  # in the pipeline, not counted yet
        # Its workspace and member in the team store (store/scope.py), set by open_store.
        self.scope: Scope | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        if sql.lstrip().upper().startswith("BEGIN IMMEDIATE"):
            sql = "BEGIN"
        cursor = self.raw.cursor()
        if params:
            cursor.execute(_translate(sql), _storable(params))  # type: ignore[call-overload]
        else:  # no parameters: psycopg reads no placeholders, so `%` stays as written
            cursor.execute(sql)  # type: ignore[call-overload]
        self._count(cursor)
        return PgCursor(cursor, self._pipeline)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        batch = list(rows)
        cursor = self.raw.cursor()
        if batch:
            cursor.executemany(_translate(sql), [_storable(row) for row in batch])  # type: ignore[arg-type]
            self._count(cursor)
        return PgCursor(cursor, self._pipeline)

    def _count(self, cursor: psycopg.Cursor[Any]) -> None:
        """Add a statement's written rows to total_changes, once its result is in."""
        if self._pipeline is not None:
            self._sent.append(cursor)
        elif cursor.rowcount > 0 and cursor.statusmessage and _writes(cursor.statusmessage):
            self.total_changes += cursor.rowcount

    @contextmanager
    def pipelined(self) -> Iterator[None]:
        """Send the statements of the block without waiting for each one's result
        (psycopg's pipeline mode): a result is waited for when it is read, and all of them
        when the block ends. A document's write is a dozen statements of which three return
        something the next ones need; the others cost no round trip of their own.

        An error surfaces where the pipeline next syncs, inside the block or at its end,
        so wrap whole transactions (BEGIN to COMMIT) in it."""
        if self._pipeline is not None:  # already in one
            yield
            return
        try:
            with self.raw.pipeline() as pipeline:
                self._pipeline = pipeline
                yield
        except BaseException:
            # A statement that failed at the last sync (a COMMIT's) made the server skip the
            # rest, COMMIT included: its transaction is still open, aborted.
            with suppress(Exception):  # a server gone cannot roll back; the error says so
                self.rollback()
            raise
        finally:
            self._pipeline = None
            sent, self._sent = self._sent, []
        for cursor in sent:  # every result is in now
            self._count(cursor)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def rollback(self) -> None:
        if self.in_transaction:
            self.raw.execute("ROLLBACK")

    def close(self) -> None:
        self.raw.close()


def _storable(params: Sequence[Any]) -> Sequence[Any]:
    """PostgreSQL text cannot hold NUL, which SQLite stores: the sources drop it from what
    they read, and any that still reaches a statement (a YAML "\\0" escape in a title)
    becomes U+FFFD here instead of failing the whole document."""
    if not any(isinstance(p, str) and "\x00" in p for p in params):
        return params
    return [p.replace("\x00", "\ufffd") if isinstance(p, str) else p for p in params]


def _writes(status: str) -> bool:
    return status.split(" ", 1)[0] in ("INSERT", "UPDATE", "DELETE")


def connect(url: str) -> PgConnection:
    """Connect to the server at `url`. A wrong URL, host, password or database is the user's
    to fix (ConfigError naming the setting); psycopg missing is too."""
    check_store_url(url, SETTING)
    try:
        import psycopg
    except ImportError:
        raise ConfigError(
            f"{SETTING} names a PostgreSQL server, but psycopg is not installed",
            # tsm is installed from its checkout: the PyPI package named tsm is another one
            "pip install 'psycopg[binary]>=3.2' (the postgres extra: pip install -e "
            "'.[postgres]' in tsm's checkout)",
        ) from None
    # psycopg logs a warning of its own when a connection dies inside a pipeline
    # (executemany): no stderr line beside the error's one (store/failures.py), which
    # Python's last-resort handler would print; a configured log (the daemon's) keeps it.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise ConfigError(
            f"{SETTING}: cannot connect to {redacted(url)}: {_first_line(exc)}",
            "check the host, port, user, password and database in the URL",
        ) from None
    except psycopg.ProgrammingError as exc:  # a malformed conninfo
        raise ConfigError(f"{SETTING}: {_first_line(exc)}") from None
    # The store indexes files: a commit that a server crash loses (the last ~0.6 s of them,
    # never a half-written one) is a file the next `tsm index` finds changed and indexes
    # again, the same trade SQLite's WAL with synchronous=NORMAL makes (store/connect.py).
    # Waiting for the disk at every document's commit took 25 of the 85 s of a 10k-chunk
    # `tsm index` here (bench/pg_team_server.py's corpus, timed by hand with and without).
    try:
        conn.execute("SET synchronous_commit = off")
    except psycopg.Error as exc:
        conn.close()
        raise storage_failure(exc, url) from None
    return PgConnection(conn, url)


def _first_line(exc: BaseException) -> str:
    """libpq's message in one line: without the connection target it repeats (the caller
    names the URL, password hidden), its follow-up lines in parentheses ("Connection refused
    (Is the server running on that host …?)")."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    first = re.sub(r"^.*\bfailed: ", "", lines[0])
    rest = " ".join(lines[1:])
    return (f"{first} ({rest})" if rest else first)[:300]


def storage_failure(exc: BaseException, url: str) -> StorageFailure:
    """A server that went away or refused mid-work: a system error (exit 2)."""
    return StorageFailure(
        f"the PostgreSQL store at {redacted(url)} failed: {_first_line(exc)}",
        "check that the server is running; the next `tsm index` completes the index",
    )


def is_server_error(exc: BaseException) -> bool:
    """A psycopg error: the server refused or went away (never imports psycopg itself)."""
    return type(exc).__module__.startswith("psycopg")
