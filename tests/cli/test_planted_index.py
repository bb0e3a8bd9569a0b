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

import pytest

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


PLANTED = {
    "a title that is a BLOB": f"UPDATE documents SET title = x'00ff' WHERE path = '{NOTE}'",
    "a path that is a BLOB": "UPDATE documents SET path = x'41' WHERE title = 'Shell setup'",
    "a section that is a BLOB": "UPDATE chunks SET section = x'00ff'",
    "a status that is a BLOB": "UPDATE documents SET status = x'00ff'",
    "a time past year 9999": "UPDATE documents SET indexed_at = 1e300",
    "an embedding_dim that is no number": (
        "UPDATE meta SET value = 'abc' WHERE key = 'embedding_dim'"
    ),
    "a vector of the wrong size": "UPDATE embeddings SET vector = x'0000'",
}
COMMANDS = (
    ("search", "install git"),
    ("search", "install git", "--fts-only"),
    ("list",),
    ("status",),
    ("info", "notes/git-install.md"),
    ("tags",),
)


@pytest.mark.parametrize("case", list(PLANTED))
def test_a_value_tsm_never_writes_is_a_corrupt_index(indexed: Path, tsm: Any, case: str) -> None:
    """Each command that meets it says in one line that the index is damaged, with the
    rebuild as the way out (it was 'unexpected error: TypeError / OverflowError /
    ValueError … report it'), and the rebuild gives an index every command reads."""
    plant(indexed, PLANTED[case])
    failed = 0
    for args in COMMANDS:
        result = tsm(*args, "-f", "json")
        assert "unexpected" not in result.err and "Traceback" not in result.err, result.err
        if result.code:
            failed += 1
            assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
            error = result.error()
            assert error["kind"] == "system_error" and "damaged" in error["error"], error
            assert "tsm rebuild --apply" in result.err
    assert failed  # the planted value is met by some command

    rebuilt = tsm("rebuild", "--apply", "-f", "json")
    assert rebuilt.code == 0, rebuilt.err
    for args in COMMANDS:
        result = tsm(*args, "-f", "json")
        assert result.code == 0, (args, result.err)
