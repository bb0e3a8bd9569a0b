"""Fixtures of the store tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.store.notes import pg_connect
from tsm.search import vector
from tsm.store.connect import open_db


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """An empty index in a temp folder, with the real schema (tests/store/notes.py writes
    notes into it)."""
    conn = open_db(tmp_path / "tsm.db", create=True)
    yield conn
    conn.close()


@pytest.fixture
def pg(pg_url: str) -> Iterator[Any]:
    """A connection to a fresh PostgreSQL store with every migration."""
    conn = pg_connect(pg_url)
    yield conn
    conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    """Each engine's store in turn: `db`, then `pg`."""
    return request.getfixturevalue("db" if request.param == "sqlite" else "pg")


@pytest.fixture
def fresh_vector_cache() -> Iterator[None]:
    """No vector index cached by an earlier test's store (their ids repeat across stores)."""
    vector._cache.clear()
    yield
    vector._cache.clear()
