"""`tsm init` and `tsm index`: incremental work, deletions, renames, bad files, and the
browse commands' JSON (list, tags, status, info, get)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest


def index(tsm: Any, *args: str) -> dict:
    result = tsm("index", "-f", "json", *args)
    assert result.code == 0, result.err
    return result.json()


@pytest.mark.sqlite_only("it checks the SQLite file init creates")
def test_init_never_overwrites(vault: Path, tsm: Any) -> None:
    (vault / "tsm.toml").write_text("[search]\ntop_k = 5\n")
    result = tsm("init", "-f", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert str(vault / "tsm.toml") in data["existing"]
    assert (vault / "tsm.toml").read_text() == "[search]\ntop_k = 5\n"
    assert (vault / ".tsmignore").exists() and (vault / ".tsm" / "tsm.db").exists()
    again = tsm("init", "-f", "json").json()
    assert again["created"] == []


def test_incremental_index(vault: Path, tsm: Any) -> None:
    first = index(tsm)
    assert first["indexed"] == 8 and first["skipped"] == [] and first["embedded"] > 0
    second = index(tsm)
    assert second["indexed"] == 0 and second["unchanged"] == 8 and second["embedded"] == 0
    note = vault / "notes" / "shell-setup.md"
    note.write_text(note.read_text() + "\nzsh is nice too.\n")
    third = index(tsm)
    assert third["indexed"] == 1 and third["unchanged"] == 7
    hits = tsm("search", "zsh", "--fts-only").json()["results"]
    assert hits[0]["source"]["path"] == "notes/shell-setup.md"


def test_touch_without_change_costs_no_reindex(indexed: Path, tsm: Any) -> None:
    note = indexed / "notes" / "shell-setup.md"
    os.utime(note, (1, 1))
    data = index(tsm)
    assert data["indexed"] == 0 and data["unchanged"] == 8


def test_deleted_and_renamed_files(indexed: Path, tsm: Any) -> None:
    (indexed / "notes" / "reading-list.txt").unlink()
    (indexed / "notes" / "shell-setup.md").rename(indexed / "notes" / "shell.md")
    data = index(tsm)
    assert data["removed"] == 1 and data["renamed"] == 1 and data["indexed"] == 1
    listed = [d["path"] for d in tsm("list", "-f", "json").json()]
    assert "notes/shell.md" in listed and "notes/shell-setup.md" not in listed
    assert "notes/reading-list.txt" not in listed
    status = tsm("status", "-f", "json").json()
    assert status["total_documents"] == 7


def test_bad_files_are_skipped_with_a_warning(vault: Path, tsm: Any) -> None:
    (vault / "binary.md").write_bytes(b"\x00\x01\x02garbage")
    (vault / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (vault / "empty.md").write_text("  \n")
    (vault / "huge.txt").write_bytes(b"a" * (10 * 1024 * 1024 + 1))
    (vault / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (vault / "broken-frontmatter.md").write_text(
        "---\ntitle: [unclosed\n---\n# Body\n\ntext about frontmatter recovery\n"
    )
    data = index(tsm, "--no-embed")
    reasons = {s["path"]: s["reason"] for s in data["skipped"]}
    assert reasons["binary.md"] == "binary file"
    assert reasons["latin1.md"] == "not valid UTF-8"
    assert reasons["empty.md"] == "empty file"
    assert reasons["huge.txt"].startswith("larger than 10 MB")
    assert reasons["broken.pdf"].startswith("unreadable PDF")
    assert "broken-frontmatter.md" not in reasons
    hits = tsm("search", "frontmatter recovery", "--fts-only").json()["results"]
    assert hits[0]["source"]["path"] == "broken-frontmatter.md"


def test_unreadable_file_keeps_its_indexed_version(vault: Path, tsm: Any) -> None:
    if os.geteuid() == 0:
        import pytest

        pytest.skip("root can read files without permission bits")
    index(tsm)


def test_tsmignore(vault: Path, tsm: Any) -> None:
    (vault / ".tsmignore").write_text("decisions/\n*.txt\n")
    index(tsm, "--no-embed")
    listed = [d["path"] for d in tsm("list", "-f", "json").json()]
    assert not any(p.startswith("decisions/") or p.endswith(".txt") for p in listed)


def test_index_single_file_and_stdin(vault: Path, tsm: Any) -> None:
    data = index(tsm, "--no-embed", str(vault / "notes" / "git-install.md"))
    assert data["indexed"] == 1
    result = tsm(
        "index",
        "-f",
        "json",
        "--no-embed",
        "--files-from-stdin",
        input=str(vault / "notes" / "shell-setup.md") + "\n",
    )
    assert result.code == 0 and result.json()["indexed"] == 1
    missing = tsm("index", "-f", "json", str(vault / "nope.md"))
    assert missing.code == 1 and missing.error()["kind"] == "user_error"
    outside = tsm("index", "-f", "json", "/etc")
    assert outside.code == 1


@pytest.mark.sqlite_only("reads the SQLite file's chunks and chunks_fts tables directly")
def test_interrupted_run_keeps_previous_state(vault: Path, tsm: Any) -> None:
    index(tsm, "--no-embed")
    db = vault / ".tsm" / "tsm.db"
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        fts = conn.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0]
    assert before == fts > 0


def test_browse_commands_json(indexed_read_only: Path, tsm: Any) -> None:
    docs = tsm("list", "-f", "json").json()
    assert isinstance(docs, list) and len(docs) == 8
    for doc in docs:
        assert set(doc) >= {"id", "title", "type", "tags", "chunk_count", "created_at"}
    tags = tsm("tags", "-f", "json").json()
    assert {"name": "setup", "count": 2} in tags
    assert any(t["name"] == "狩猟" for t in tags)
    status = tsm("status", "-f", "json").json()
    assert status["documents"] == {"markdown": 6, "pdf": 1, "text": 1}
    assert status["total_chunks"] > 0 and status["db_size_bytes"] > 0
    assert status["schema_version"] >= 1 and status["embedding_dim"] == 384
    assert status["model_name"] and status["chunks_without_vectors"] == 0
    info = tsm("info", "notes/git-install.md", "-f", "json").json()
    assert info["title"] == "Installing Git" and info["date_source"] == "frontmatter:created"
    assert info["sections"][0] == "Installing Git > On Debian and Ubuntu"
    daily = tsm("info", "daily/2026-03-15.md", "-f", "json").json()
    assert daily["date"] == "2026-03-15" and daily["date_source"] == "filename"
    got = tsm("get", str(info["id"]), "-f", "json").json()
    assert "sudo apt-get install git" in got["text"]
    missing = tsm("get", "notes/git-instal.md", "-f", "json")
    assert missing.code == 1 and "notes/git-install.md" in missing.error()["error"]
