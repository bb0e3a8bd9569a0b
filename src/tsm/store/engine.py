"""Which engine a connection is open on: `store_of(conn)` gives its implementation of the
Store protocol (store/protocol.py). store/connect.py's open_store chose the engine; this
only maps the connection it made to the engine's package."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from . import sqlite

if TYPE_CHECKING:
    from .connect import Connection
    from .protocol import Store


def store_of(conn: Connection) -> Store:
    """A server's connection is PostgreSQL's, any other an SQLite file's."""
    if isinstance(conn, sqlite3.Connection):
        return sqlite.STORE
    from . import postgres

    return postgres.STORE
