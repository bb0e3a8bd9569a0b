"""Fixtures of the store tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tsm.store.connect import open_db


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """An empty index in a temp folder, with the real schema (tests/store/notes.py writes
    notes into it)."""
    conn = open_db(tmp_path / "tsm.db", create=True)
    yield conn
    conn.close()
