"""`tsm doctor` on an index that opens but cannot be read throughout: the whole report, with
the damage as the database section's error, never a bare error in place of the report."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest


def damage_table(db: Path, table: str) -> None:
    """Overwrite the root page of `table` with garbage; the schema stays readable."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")  # the WAL folded in: the file is all there is
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    conn.close()
    with db.open("r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\x0d" + b"\xff" * (page_size - 1))


@pytest.mark.sqlite_only("damages a page of the SQLite file")
def test_doctor_reports_a_damaged_vector_table_in_its_report(indexed: Path, tsm: Any) -> None:
    db = indexed / ".tsm" / "tsm.db"
    damage_table(db, "embeddings")
    result = tsm("doctor", "-f", "json")
    assert result.code == 2, result.err
    report = result.json()
    sections = {s["name"]: s["items"] for s in report["sections"]}
    assert list(sections) == ["database", "daemon", "embedder", "vectors", "paths", "trust"]
    integrity = sections["database"][0]
    assert integrity["name"] == "integrity" and integrity["status"] == "error"
    assert str(db) in integrity["message"] and "cannot be read" in integrity["message"]
    assert "tsm rebuild --apply" in integrity["fix"]
    assert sections["vectors"] == []  # not counted twice: the database section says it
    assert report["error_count"] == 1
    assert result.error()["kind"] == "system_error"
    human = tsm("doctor", "-f", "human")
    assert human.code == 2 and "ERROR integrity" in human.out and "trust:" in human.out
    assert "Traceback" not in human.err
