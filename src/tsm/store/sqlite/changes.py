"""The vector change log in SQLite (migration m003): writers commit one at a time, so a
reader's stamp is the latest seq it has read (an int)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..connect import Connection
    from ..protocol import Stamp


def change_seq(conn: Connection) -> Stamp:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'").fetchone()
    return int(row[0]) if row else 0


def unchanged_since(conn: Connection, stamp: Stamp) -> bool:
    return stamp == change_seq(conn)


def changes_since(conn: Connection, seq: Stamp) -> tuple[list[int], Stamp] | None:
    assert isinstance(seq, int)
    latest = change_seq(conn)
    assert isinstance(latest, int)
    if latest == seq:
        return [], seq
    oldest = conn.execute("SELECT MIN(seq) FROM vector_changes").fetchone()[0]
    if oldest is None or oldest > seq + 1:
        return None
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT chunk_id FROM vector_changes WHERE seq > ? AND seq <= ?", (seq, latest)
        )
    ]
    return ids, latest


def prune_changes(conn: Connection, keep: int) -> int:
    seq = change_seq(conn)
    assert isinstance(seq, int)
    return conn.execute("DELETE FROM vector_changes WHERE seq <= ?", (seq - keep,)).rowcount
