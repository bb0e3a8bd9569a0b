"""Migration m008 on a store as tsm left it before (schema version 7), on both engines: the
lines its chunks hold are their sections' (or a transcript turn's), not where each chunk
starts, so they are cleared; rows written after keep theirs."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tsm.store import migrations
from tsm.store.connect import Transaction
from tsm.store.postgres import connection as postgres

BEFORE_LINES = 7  # the schema version before m008


def write_chunks(conn: Any, path: str, lines: list[int | None]) -> None:
    with Transaction(conn):
        (doc_id,) = conn.execute(
            """INSERT INTO documents(path, type, title, content_hash, size, mtime, category,
               text, indexed_at) VALUES (?, 'markdown', ?, ?, 1, 0, 'note', 'x', 0)
               RETURNING id""",
            (path, path, path),
        ).fetchone()
        for index, line in enumerate(lines):
            conn.execute(
                """INSERT INTO chunks(document_id, chunk_index, section, line, text, embed_hash)
                   VALUES (?, ?, '', ?, 'x', ?)""",
                (doc_id, index, line, f"{path}-{index}"),
            )


def lines_by_path(conn: Any) -> dict[str, list[int | None]]:
    rows = conn.execute(
        """SELECT d.path, c.line FROM chunks c JOIN documents d ON d.id = c.document_id
           ORDER BY d.path, c.chunk_index"""
    ).fetchall()
    found: dict[str, list[int | None]] = {}
    for path, line in rows:
        found.setdefault(path, []).append(line)
    return found


def check_lines_cleared(conn: Any) -> None:
    assert migrations.apply(conn, up_to=BEFORE_LINES) == BEFORE_LINES
    write_chunks(conn, "old.md", [3, 3, 3, None])
    assert migrations.apply(conn) == migrations.LATEST
    write_chunks(conn, "new.md", [2, 9])
    assert lines_by_path(conn) == {"old.md": [None] * 4, "new.md": [2, 9]}


def test_an_sqlite_index_of_schema_7_loses_its_section_lines(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "tsm.db", isolation_level=None)
    try:
        check_lines_cleared(conn)
    finally:
        conn.close()


def test_a_team_store_of_schema_7_loses_its_section_lines(pg_url: str) -> None:
    conn = postgres.connect(pg_url)
    try:
        check_lines_cleared(conn)
    finally:
        conn.close()
