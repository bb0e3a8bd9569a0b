"""The `meta` table: the index's key-value bookkeeping (model name and dimension, embedding
rate, counters), the same SQL on both engines."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .connect import Connection


def get_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def add_to_meta(conn: Connection, key: str, n: int) -> None:
    """Add `n` to a counter kept in meta, in one statement (two writers never lose a count)."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
        "SET value = CAST(CAST(meta.value AS INTEGER) + ? AS TEXT)",
        (key, str(n), n),
    )
