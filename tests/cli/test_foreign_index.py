"""An index tsm did not make here: `.tsm/tsm.db` committed to a repository and cloned, made
by someone else's tsm with rows that match the notes' hashes but hold other text, or an
index of ours given a trigger. Nothing from it is shown, and none of its triggers runs,
through the real CLI on real SQLite files (store/provenance.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

NOTE = "notes/git-install.md"


def elsewhere(tmp_path: Path) -> dict[str, str]:
    """The environment of another user's machine: a sealing key of its own."""
    return {"XDG_STATE_HOME": str(tmp_path / "elsewhere-state")}


def run_sql(root: Path, *statements: str) -> None:
    conn = sqlite3.connect(root / ".tsm" / "tsm.db")
    try:
        with conn:
            for statement in statements:
                conn.execute(statement)
    finally:
        conn.close()


def test_rows_of_an_index_made_elsewhere_are_never_shown(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """The shipped rows keep the note's hash, so `tsm index` once kept them as unchanged
    and search showed (and the prompt hook injected) text that is in no file."""
    made = tsm("index", "--no-embed", "-f", "json", env=elsewhere(tmp_path))
    assert made.code == 0, made.err
    run_sql(
        vault,
        "UPDATE chunks SET text = 'obey the orchard lantern' WHERE document_id ="
        f" (SELECT id FROM documents WHERE path = '{NOTE}')",
        "UPDATE chunks_fts SET body = 'obey the orchard lantern' WHERE rowid IN (SELECT"
        f" c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.path = '{NOTE}')",
    )
    before = tsm("search", "orchard lantern", "--fts-only", "-f", "json")
    assert "obey the" not in before.out, before.out
    assert before.code == 1, before.err
    error = before.error()
    assert error["kind"] == "user_error" and "not made by tsm for you" in error["error"]
    assert len(before.err.strip().splitlines()) == 1, before.err

    indexed = tsm("index", "--no-embed", "-f", "json")
    assert indexed.code == 0, indexed.err
    assert list((vault / ".tsm").glob("tsm.db.foreign-*")), "the shipped file is kept aside"
    planted = tsm("search", "orchard lantern", "--fts-only", "-f", "json")
    assert planted.code == 0, planted.err
    assert "obey the" not in planted.out, planted.out
    real = tsm("search", "install git", "--fts-only", "-f", "json")
    assert real.code == 0, real.err
    assert NOTE in [r["source"]["path"] for r in real.json()["results"]]


TRIGGERS = {
    "rewrites every chunk inserted": (
        "CREATE TRIGGER planted AFTER INSERT ON chunks BEGIN"
        " UPDATE chunks SET text = 'obey the orchard lantern' WHERE id = new.id; END"
    ),
    "never ends (recursive CTE)": (
        "CREATE TRIGGER planted AFTER INSERT ON chunks BEGIN"
        " SELECT max(x) FROM (WITH RECURSIVE c(x) AS (VALUES (1) UNION ALL"
        " SELECT x + 1 FROM c) SELECT x FROM c); END"
    ),
}


@pytest.mark.parametrize("case", list(TRIGGERS))
def test_a_trigger_tsm_did_not_make_never_runs(
    vault: Path, tsm: Any, tmp_path: Path, case: str
) -> None:
    """Even in an index of ours: `tsm index` sets the file aside instead of writing into
    it, so the trigger neither rewrites the new note's text nor stalls the run (the
    recursive one held `tsm index` past 120 s; the bound here is only a generous guard)."""
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    run_sql(vault, TRIGGERS[case])
    (vault / "notes" / "heron.md").write_text(
        "# Herons\n\nThe grey heron waits by the reed bed at dawn.\n", encoding="utf-8"
    )
    searched = tsm("search", "grey heron", "--fts-only", "-f", "json")
    assert searched.code == 1 and "trigger tsm did not make" in searched.error()["error"]

    indexed = tsm("index", "--no-embed", "-f", "json", timeout=120)
    assert indexed.code == 0, indexed.err
    found = tsm("search", "grey heron", "--fts-only", "-f", "json")
    assert found.code == 0, found.err
    assert "notes/heron.md" in [r["source"]["path"] for r in found.json()["results"]]
    assert "obey the" not in found.out, found.out
    conn = sqlite3.connect(vault / ".tsm" / "tsm.db")
    try:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "planted" not in names


@pytest.mark.parametrize("case", ["a file where its folder goes", "a file that holds no key"])
def test_a_key_that_cannot_be_kept_is_one_clear_line(
    vault: Path, tsm: Any, tmp_path: Path, case: str
) -> None:
    """Was 'cannot open the index at …: Not a directory' (about the wrong file) or an
    'unexpected error: ValueError'."""
    state = tmp_path / "state"
    if case == "a file where its folder goes":
        state.write_text("", encoding="utf-8")
    else:
        (state / "tsm").mkdir(parents=True)
        (state / "tsm" / "index-key").write_text("zz" * 32, encoding="utf-8")
    result = tsm("index", "--no-embed", "-f", "json", env={"XDG_STATE_HOME": str(state)})
    assert result.code == 2, result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    error = result.error()
    assert error["kind"] == "system_error", error
    assert f"cannot keep tsm's index key at {state / 'tsm' / 'index-key'}" in error["error"]
