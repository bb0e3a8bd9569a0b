"""An index tsm did not write itself: `.tsm/tsm.db` shipped in a cloned repository, damaged,
or filled by `tsm import` from a file someone handed over. Its rows are data, never a
reason to read outside the index root or to fail with "unexpected error", through the real
CLI on a real SQLite file changed with plain SQL."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

NOTE = "notes/git-install.md"


def plant(root: Path, sql: str, *params: Any) -> None:
    conn = sqlite3.connect(root / ".tsm" / "tsm.db")
    try:
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


def test_a_stored_path_out_of_the_root_is_never_read(
    indexed: Path, tsm: Any, tmp_path: Path
) -> None:
    """A note's stored path with `..`, an absolute one or one holding a NUL: search drops it
    with a warning instead of checking and reading the file it names (the human listing read
    it for a line number, `--open` opened it), and a NUL was an 'unexpected error'."""
    outside = tmp_path / "outside" / "git-install.md"
    outside.parent.mkdir()
    shutil.copy2(indexed / NOTE, outside)  # the same text: a read would find its line
    log = tmp_path / "opened.txt"
    log.write_text("", encoding="utf-8")
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\necho "$@" >> {log}\n', encoding="utf-8")
    editor.chmod(0o755)
    for stored in (os.path.relpath(outside, indexed), str(outside), "notes/a\0b.md"):
        plant(
            indexed,
            "UPDATE documents SET path = ? WHERE path IN (?, ?, ?)",
            stored,
            NOTE,
            os.path.relpath(outside, indexed),
            str(outside),
        )
        result = tsm("search", "install git", "--fts-only", "-f", "json")
        assert result.code == 0, (stored, result.err)
        data = result.json()
        assert stored not in [r["source"]["path"] for r in data["results"]], stored
        assert any("no path inside the index root" in w for w in data["warnings"]), data
        human = tsm("search", "install git", "--fts-only", "-f", "human")
        assert human.code == 0 and "Traceback" not in human.err, human.err
        assert not re.search(re.escape(stored) + r":\d", human.out), human.out  # no line read
        opened = tsm(
            "search", "install git", "--fts-only", "--open", "1", env={"EDITOR": str(editor)}
        )
        assert opened.code == 0, opened.err
    assert str(outside) not in log.read_text(encoding="utf-8")  # no editor opened it


def test_an_export_naming_a_note_out_of_the_root_is_refused(
    indexed: Path, tsm: Any, tmp_path: Path
) -> None:
    good = tmp_path / "good.tsm.gz"
    assert tsm("export", str(good)).code == 0
    lines = gzip.decompress(good.read_bytes()).decode().splitlines()
    listed = tsm("list", "-f", "json").out
    for stored in ("../outside.md", "/etc/passwd", "notes/../../x.md", "a\0b.md"):
        records = [json.loads(line) for line in lines]
        next(r for r in records if r.get("kind") == "document")["path"] = stored
        bad = tmp_path / "bad.tsm.gz"
        bad.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
        result = tsm("import", str(bad), "--replace", "-f", "json")
        assert result.code == 1, (stored, result.out, result.err)
        assert "no path inside the index root" in result.error()["error"]
        assert len(result.err.strip().splitlines()) == 1
        assert tsm("list", "-f", "json").out == listed
