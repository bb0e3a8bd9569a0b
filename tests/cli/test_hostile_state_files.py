"""The files a user keeps in the state dir (synonyms.csv, user_dict.csv and its compiled
user_dict.dic), as a cloned repository that ships its own `.tsm/` plants them, through the
real CLI: a link to a FIFO, a device or a file outside the root, or a dictionary that is not
one. tsm reads only the regular file itself; a search never hangs, never reads outside, and
a bad dictionary is a one-line user error naming it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

USER_DICT_ROW = (
    "ふーばー,4,4,5000,ふーばー,名詞,固有名詞,一般,*,*,*,フーバー,ふーばー,*,A,*,*,*,*\n"
)


@pytest.fixture
def clone(tmp_path: Path, tsm: Any) -> Path:
    """An indexed clone (untrusted) with a note about widgets and its own `.tsm/`."""
    root = tmp_path / "clone"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# Widgets\n\nwidgets are small parts\n")
    (root / "tsm.toml").write_text("")
    result = tsm("index", "--no-embed", "-f", "json", cwd=root, timeout=60)
    assert result.code == 0, result.err
    return root


def search(tsm: Any, root: Path, query: str) -> Any:
    return tsm("search", query, "--fts-only", "-f", "json", cwd=root, timeout=60)


def found(tsm: Any, root: Path, query: str) -> list[str]:
    result = search(tsm, root, query)
    assert result.code == 0, result.err
    return [r["source"]["path"] for r in result.json()["results"]]


def test_synonyms_are_read_from_the_file_itself_only(clone: Path, tsm: Any, tmp_path: Path) -> None:
    synonyms = clone / ".tsm" / "synonyms.csv"
    synonyms.write_text("widgets,plumbicornium\n")
    assert found(tsm, clone, "plumbicornium") == ["notes/a.md"]  # the file itself works

    outside = tmp_path / "outside.csv"
    outside.write_text("widgets,grizzlephant\n")
    synonyms.unlink()
    synonyms.symlink_to(outside)  # a table outside the root is not read
    assert found(tsm, clone, "grizzlephant") == []

    synonyms.unlink()
    os.mkfifo(tmp_path / "fifo")
    synonyms.symlink_to(tmp_path / "fifo")  # opening a FIFO with no writer blocks for ever
    assert found(tsm, clone, "widgets") == ["notes/a.md"]

    synonyms.unlink()
    os.mkfifo(synonyms)
    assert found(tsm, clone, "widgets") == ["notes/a.md"]


def test_a_linked_user_dictionary_source_is_refused(clone: Path, tsm: Any, tmp_path: Path) -> None:
    outside = tmp_path / "private.csv"  # a valid dictionary, but not the clone's to read
    outside.write_text(USER_DICT_ROW)
    (clone / ".tsm" / "user_dict.csv").symlink_to(outside)
    result = search(tsm, clone, "widgets")
    assert result.code == 1, result.err
    error = result.error()
    assert error["kind"] == "user_error" and "user_dict.csv" in error["error"], error
    assert not (clone / ".tsm" / "user_dict.dic").exists()


def test_a_shipped_dictionary_that_is_not_one_is_a_user_error(clone: Path, tsm: Any) -> None:
    state = clone / ".tsm"
    (state / "user_dict.csv").write_text(USER_DICT_ROW)
    (state / "user_dict.dic").write_bytes(b"\x00garbage\xff" * 500)  # newer than the CSV
    result = search(tsm, clone, "widgets")
    assert result.code == 1, result.err
    error = result.error()
    assert error["kind"] == "user_error" and "user_dict.dic" in error["error"], error
    (state / "user_dict.dic").unlink()
    (state / "user_dict.dic").symlink_to("/dev/zero")  # a link is never taken as built
    assert found(tsm, clone, "widgets") == ["notes/a.md"]
    assert not (state / "user_dict.dic").is_symlink()


def test_an_index_from_a_newer_schema_is_neither_read_nor_written(clone: Path, tsm: Any) -> None:
    db = clone / ".tsm" / "tsm.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")  # a newer tsm's, or a clone's claim to one
    (clone / "notes" / "b.md").write_text("# More\n\nmore widgets\n")
    for args in (("search", "widgets", "--fts-only"), ("index", "--no-embed"), ("list",)):
        result = tsm(*args, "-f", "json", cwd=clone, timeout=60)
        assert result.code == 2, (args, result.out, result.err)
        error = result.error()
        assert error["kind"] == "system_error" and "schema version 99" in error["error"], error
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 99
        assert [r[0] for r in conn.execute("SELECT path FROM documents")] == ["notes/a.md"]


@pytest.mark.parametrize("aliases", ["x", "5", '{"a": 1}', "[1]", "[" * 100_000 + "]" * 100_000])
def test_malformed_aliases_in_a_planted_index_are_a_corrupt_index(
    clone: Path, tsm: Any, aliases: str
) -> None:
    conn = sqlite3.connect(clone / ".tsm" / "tsm.db")
    with conn:
        conn.execute("UPDATE documents SET aliases = ?", (aliases,))
    conn.close()
    for args in (("search", "widgets", "--fts-only"), ("info", "notes/a.md")):
        result = tsm(*args, "-f", "json", cwd=clone, timeout=60)
        assert result.code == 2, (args, result.out, result.err)
        error = result.error()["error"]
        assert "malformed aliases" in error and "notes/a.md" in error, error
        assert "unexpected" not in error
    rebuilt = tsm("rebuild", "--apply", "-f", "json", cwd=clone, timeout=120)
    assert rebuilt.code == 0, rebuilt.err
    assert search(tsm, clone, "widgets").code == 0


def test_a_planted_generic_vectors_cache_link_is_not_read(
    clone: Path, tsm: Any, tmp_path: Path
) -> None:
    """`.tsm/cache/generic-<model>-<digest>.npy` (a model without shipped generic vectors:
    `fake`, which an untrusted tsm.toml may choose) linking to a FIFO, as a clone can point
    one at /proc/self/fd/0: reading it waited for ever on every search."""
    (clone / "tsm.toml").write_text('[embedding]\nmodel = "fake"\n')
    assert tsm("index", "-f", "json", cwd=clone, timeout=120).code == 0
    assert search(tsm, clone, "widgets").code == 0  # saves the cache
    (cache,) = (clone / ".tsm" / "cache").glob("generic-fake-*.npy")
    cache.unlink()
    os.mkfifo(tmp_path / "fifo")
    cache.symlink_to(tmp_path / "fifo")
    result = tsm("search", "widgets", "-f", "json", cwd=clone, timeout=60)
    assert result.code == 0, result.err
    reply = result.json()
    assert reply["mode"] == "hybrid" and reply["results"][0]["score_breakdown"]["noise"] is not None
    assert not cache.is_symlink()  # computed again and saved as a file of its own


def test_a_planted_pid_file_link_is_not_read(clone: Path, tsm: Any, tmp_path: Path) -> None:
    """`.tsm/tsmd.pid` linking to a FIFO (to /dev/zero it read until MemoryError)."""
    os.mkfifo(tmp_path / "fifo")
    (clone / ".tsm" / "tsmd.pid").symlink_to(tmp_path / "fifo")
    status = tsm("status", "-f", "json", cwd=clone, timeout=60)
    assert status.code == 0, status.err
    assert status.json()["daemon"]["pid"] is None
    stop = tsm("stop", "-f", "json", cwd=clone, timeout=60)
    assert stop.code == 0, stop.err


def test_a_note_swapped_for_a_fifo_link_does_not_hang_human_output(
    clone: Path, tsm: Any, tmp_path: Path
) -> None:
    """Human output reads the note to show the hit's line number; after `git pull` turned it
    into a link to a FIFO (or /proc/self/fd/0, the terminal) that read never returned."""
    note = clone / "notes" / "a.md"
    note.unlink()
    os.mkfifo(tmp_path / "fifo")
    note.symlink_to(tmp_path / "fifo")
    result = tsm("search", "widgets", "--fts-only", "-f", "human", cwd=clone, timeout=60)
    assert result.code == 0, result.err
    assert "notes/a.md" in result.out
