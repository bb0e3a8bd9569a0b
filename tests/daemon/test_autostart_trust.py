"""The daemon a search autostarts in a root the user has not trusted keeps it untrusted: it
was spawned with TSM_INDEX_ROOT set to the root, which is how a user says a root is theirs,
so it applied the repository's tsm.toml in full: a sessions folder outside the root was
ingested by its catch-up scan (the user's transcripts in the repository's index), and an
embedding.model = openai:<url> would have sent the notes there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import wait_for

SECRET = "zanzibarquux"


def test_an_autostarted_daemon_keeps_the_root_untrusted(
    tmp_path: Path, tsm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "other-sessions"
    outside.mkdir()
    turn = {
        "type": "user",
        "uuid": "1",
        "timestamp": "2024-01-01T00:00:00Z",
        "message": {"role": "user", "content": f"my private question about {SECRET}"},
    }
    (outside / "s.jsonl").write_text(json.dumps(turn) + "\n")
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "a.md").write_text("# A\n\nhello world\n")
    (clone / "tsm.toml").write_text(f'[sessions]\ndirs = ["{outside}"]\n')
    monkeypatch.setenv("TSM_EMBEDDER", "none")
    monkeypatch.delenv("TSM_AUTOSTART")  # a search starts the daemon, as by default
    try:
        assert tsm("index", "-f", "json", cwd=clone, timeout=120).code == 0
        assert tsm("search", "hello", "-f", "json", cwd=clone, timeout=120).code == 0

        def status() -> dict[str, Any]:
            result = tsm("status", "-f", "json", cwd=clone, timeout=60)
            assert result.code == 0, result.err
            return dict(result.json())

        def stored() -> bool:
            """The secret in the index files, read without a tsm process."""
            state = clone / ".tsm"
            return any(SECRET.encode() in f.read_bytes() for f in state.glob("tsm.db*"))

        wait_for(lambda: status()["daemon"]["state"] == "running", 60, "the daemon")
        (clone / "b.md").write_text("# B\n\nmore words\n")  # and a watcher run

        def listed() -> set[str]:
            return {d["path"] for d in tsm("list", "-f", "json", cwd=clone, timeout=60).json()}

        wait_for(lambda: "b.md" in listed(), 60, "the watcher to index b.md")

        def settled() -> bool:
            assert not stored(), "the daemon ingested the sessions folder outside the root"
            now = status()
            return bool(now["watcher"].get("caught_up")) and now["queue"]["writer_jobs"] == 0

        wait_for(settled, 60, "the catch-up scan and an idle writer")
        now = status()
        assert now["trusted"] is False
        assert not now["daemon"].get("other_settings"), now["daemon"]  # the same settings
        found = tsm("search", SECRET, "--fts-only", "-f", "json", cwd=clone)
        assert found.code == 0, found.err
        assert found.json()["results"] == []
    finally:
        tsm("stop", "-f", "json", cwd=clone, timeout=60)


def test_a_relative_index_root_reaches_the_daemon_as_the_same_root(
    tmp_path: Path, tsm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TSM_INDEX_ROOT=notes, taken from the caller's working directory: the daemon, which runs
    in the root, must not take it from there (notes/notes)."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "n.md").write_text("# N\n\nrelword here\n")
    monkeypatch.setenv("TSM_EMBEDDER", "none")
    monkeypatch.setenv("TSM_INDEX_ROOT", "notes")
    monkeypatch.delenv("TSM_AUTOSTART")
    try:
        assert tsm("index", "-f", "json", cwd=tmp_path, timeout=120).code == 0
        assert tsm("search", "relword", "-f", "json", cwd=tmp_path, timeout=120).code == 0
        wait_for(
            lambda: (
                tsm("status", "-f", "json", cwd=tmp_path).json()["daemon"]["state"] == "running"
            ),
            60,
            "the daemon",
        )
        status = tsm("status", "-f", "json", cwd=tmp_path).json()
        assert status["index_root"] == str(tmp_path / "notes")
        assert not status["daemon"].get("other_settings"), status["daemon"]
    finally:
        tsm("stop", "-f", "json", cwd=tmp_path, timeout=60)
