"""`tsm import` stores what indexing would have stored, whatever the export says: chunks of
at most `chunking.max_chars`, documents within the size indexing reads, a session's secrets
redacted. Through the real CLI on an export edited as someone handing it over could."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

NOTE = "notes/git-install.md"
KEY = "sk-ant-" + "api03-" + "Zx9" * 30
NO_VECTORS = {"TSM_EMBEDDER": "none"}


def exported(vault: Path, tsm: Any, tmp_path: Path) -> list[dict[str, Any]]:
    assert tsm("index", "--no-embed", "-f", "json", env=NO_VECTORS).code == 0
    file = tmp_path / "index.tsm.gz"
    assert tsm("export", str(file), "-f", "json", env=NO_VECTORS).code == 0
    return [json.loads(line) for line in gzip.decompress(file.read_bytes()).splitlines()]


def write(records: list[dict[str, Any]], file: Path) -> Path:
    file.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    return file


def document(records: list[dict[str, Any]], path: str) -> dict[str, Any]:
    return next(r for r in records if r.get("kind") == "document" and r["path"] == path)


def test_an_imported_chunk_is_cut_as_indexing_cuts_it(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """One 100 MB chunk made every search that hit it take 52 s; 600 KB shows the cut."""
    records = exported(vault, tsm, tmp_path)
    note = document(records, NOTE)
    huge = "install git with the package manager. " * 16_000  # ~600 KB, one chunk
    note["text"] = huge
    records[-1]["chunks"] -= len(note["chunks"]) - 1  # the end record counts them
    note["chunks"] = [dict(note["chunks"][0], chunk_index=0, text=huge)]
    result = tsm("import", str(write(records, tmp_path / "big.tsm.gz")), "--replace", "-f", "json")
    assert result.code == 0, result.err
    conn = sqlite3.connect(vault / ".tsm" / "tsm.db")
    try:
        longest, pieces = conn.execute(
            "SELECT MAX(LENGTH(c.text)), COUNT(*) FROM chunks c JOIN documents d"
            " ON d.id = c.document_id WHERE d.path = ?",
            (NOTE,),
        ).fetchone()
    finally:
        conn.close()
    assert longest <= 1000 and pieces > 500, (longest, pieces)
    assert result.json()["chunks"] >= pieces
    found = tsm("search", "install git", "--fts-only", "-f", "json", env=NO_VECTORS)
    assert found.code == 0 and NOTE in [r["source"]["path"] for r in found.json()["results"]]


def test_an_imported_document_over_the_size_cap_is_skipped(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    records = exported(vault, tsm, tmp_path)
    note = document(records, NOTE)
    note["text"] = "x" * (2 * 2**20)
    file = write(records, tmp_path / "big.tsm.gz")
    result = tsm("import", str(file), "--replace", "-f", "json", env={"TSM_MAX_FILE_MB": "1"})
    assert result.code == 0, result.err
    report = result.json()
    assert report["skipped"] == [
        {
            "path": NOTE,
            "reason": "larger than 1 MB, the most indexing reads;"
            " raise index.max_file_mb (TSM_MAX_FILE_MB) to import it",
        }
    ]
    listed = [d["path"] for d in tsm("list", "-f", "json").json()]
    assert NOTE not in listed and "notes/shell-setup.md" in listed


def test_an_imported_session_has_its_secrets_redacted(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    records = exported(vault, tsm, tmp_path)
    template = document(records, NOTE)
    session = dict(
        template,
        path="~/.claude/projects/p/s.jsonl",
        type="session",
        title=f"my key is {KEY}",
        text=f"Q: here is my key {KEY}\nA: thanks",
        chunks=[dict(template["chunks"][0], chunk_index=0, text=f"here is my key {KEY}")],
        links=[],
        names=[],
    )
    records.insert(-1, session)
    end = records[-1]
    end["documents"] += 1
    end["chunks"] += 1
    result = tsm("import", str(write(records, tmp_path / "s.tsm.gz")), "--replace", "-f", "json")
    assert result.code == 0, result.err
    got = tsm("get", "~/.claude/projects/p/s.jsonl", "-f", "json")
    assert got.code == 0, got.err
    found = tsm("search", "here is my key", "--fts-only", "-f", "json", env=NO_VECTORS)
    assert found.code == 0, found.err
    assert "[redacted:" in got.out
    for output in (got.out, found.out, tsm("list", "-f", "json").out):
        assert KEY not in output
