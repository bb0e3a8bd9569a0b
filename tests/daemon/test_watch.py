"""The watcher reflects creations, edits, deletions and renames within seconds, honours
.tsmignore, and leaves the index exactly right after a burst."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from claude_home import project_dir
from daemon_harness import Harness, wait_for

DEADLINE = 30  # generous for a loaded 2-core CI machine; a pass usually takes ~1 s
# Embedding starts a second copy of the model (the backfill worker): seconds, more when loaded.
EMBED_DEADLINE = 180
SESSION = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"


def paths(h: Harness) -> set[str]:
    result = h.cli("list", "-f", "json")
    assert result.code == 0, result.err
    return {d["path"] for d in result.json()}


def top_paths(h: Harness, query: str) -> list[str]:
    result = h.cli("search", query, "--fts-only", "-f", "json")
    assert result.code == 0, result.err
    return [r["source"]["path"] for r in result.json()["results"]]


def test_create_edit_rename_delete_are_picked_up(daemon: Harness) -> None:
    note = daemon.root / "notes" / "zebra.md"
    note.write_text("# Zebra crossing\n\nThe quokkaphant lives here.\n", encoding="utf-8")
    wait_for(
        lambda: "notes/zebra.md" in top_paths(daemon, "quokkaphant"),
        DEADLINE,
        "a created note to be searchable",
    )

    note.write_text("# Zebra crossing\n\nNow about the flamingorilla.\n", encoding="utf-8")
    wait_for(
        lambda: "notes/zebra.md" in top_paths(daemon, "flamingorilla"),
        DEADLINE,
        "an edit to be searchable",
    )
    assert top_paths(daemon, "quokkaphant") == []

    note.rename(daemon.root / "notes" / "okapi.md")
    wait_for(
        lambda: "notes/okapi.md" in paths(daemon) and "notes/zebra.md" not in paths(daemon),
        DEADLINE,
        "a rename to be re-pointed",
    )
    assert top_paths(daemon, "flamingorilla") == ["notes/okapi.md"]

    (daemon.root / "notes" / "okapi.md").unlink()
    wait_for(lambda: "notes/okapi.md" not in paths(daemon), DEADLINE, "a deletion")
    assert top_paths(daemon, "flamingorilla") == []


def all_embedded(h: Harness) -> bool:
    """Every chunk has a vector (the sample template is fully embedded to begin with)."""
    status = h.status()
    return status["total_chunks"] > 0 and status["chunks_without_vectors"] == 0


def vector_top(h: Harness, text: str) -> str:
    result = h.cli("search", text, "--vec-only", "-k", "1", "-f", "json")
    assert result.code == 0, result.err
    return str(result.json()["results"][0]["source"]["path"])


def test_notes_the_watcher_indexes_get_vectors(daemon: Harness) -> None:
    """The watcher's chunks reached the keyword index but never the backfill
    (it was woken before the watcher's job had run, found nothing, and went idle)."""
    assert all_embedded(daemon)
    note = daemon.root / "notes" / "heron.md"
    first = "# Herons\n\nThe grey heron waits motionless in the shallows for passing fish.\n"
    note.write_text(first, encoding="utf-8")
    wait_for(lambda: "notes/heron.md" in top_paths(daemon, "heron"), DEADLINE, "the new note")
    wait_for(lambda: all_embedded(daemon), EMBED_DEADLINE, "the new note's vector", interval=1)
    assert vector_top(daemon, "grey heron waits motionless in the shallows") == "notes/heron.md"

    second = "# Herons\n\nHerons nest in colonies called heronries, high in old trees.\n"
    note.write_text(second, encoding="utf-8")
    wait_for(
        lambda: "notes/heron.md" in top_paths(daemon, "heronries"), DEADLINE, "the edited note"
    )
    wait_for(lambda: all_embedded(daemon), EMBED_DEADLINE, "the edit's vector", interval=1)
    assert vector_top(daemon, "herons nest in colonies in old trees") == "notes/heron.md"


def test_an_ingested_session_and_an_indexed_file_get_vectors(harness: Harness) -> None:
    """`tsm ingest-session` (the Stop hook) and `tsm index FILE` (PostToolUse) through a
    daemon that does not watch, so only those requests can have written the chunks."""
    harness.start("--no-watch")
    transcript = project_dir(harness.root) / "session.jsonl"
    shutil.copy(SESSION, transcript)
    result = harness.cli("ingest-session", str(transcript), "-f", "json")
    assert result.code == 0, result.err
    assert result.json()["chunks"] == 3
    wait_for(lambda: all_embedded(harness), EMBED_DEADLINE, "the session's vectors", interval=1)

    note = harness.root / "notes" / "sandpiper.md"
    note.write_text("# Sandpipers\n\nSandpipers probe the wet sand for worms.\n", "utf-8")
    result = harness.cli("index", "-f", "json", "--", str(note))
    assert result.code == 0, result.err
    assert result.json()["indexed"] == 1
    wait_for(lambda: all_embedded(harness), EMBED_DEADLINE, "the indexed note's vector", 1)
    assert vector_top(harness, "sandpipers probe the wet sand") == "notes/sandpiper.md"


def test_ignored_files_and_folders_moved_in_and_out(daemon: Harness) -> None:
    (daemon.root / ".tsmignore").write_text("drafts/\n", encoding="utf-8")
    drafts = daemon.root / "drafts"
    drafts.mkdir()
    (drafts / "secret.md").write_text("# Secret\n\nwombatross\n", encoding="utf-8")
    folder = daemon.root / "incoming"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nplatypenguin\n", encoding="utf-8")
    wait_for(lambda: "incoming/a.md" in paths(daemon), DEADLINE, "a new folder's note")
    assert "drafts/secret.md" not in paths(daemon)

    shutil.move(str(folder), str(daemon.root / "archive"))
    wait_for(
        lambda: "archive/a.md" in paths(daemon) and "incoming/a.md" not in paths(daemon),
        DEADLINE,
        "a moved folder",
    )
    shutil.rmtree(daemon.root / "archive")
    wait_for(lambda: "archive/a.md" not in paths(daemon), DEADLINE, "a deleted folder")


def test_changes_made_while_the_daemon_was_stopped_are_caught_up(harness: Harness) -> None:
    """No event reports them: one scan after the watches exist does, without `tsm index`."""
    (harness.root / "notes" / "offline.md").write_text(
        "# Offline\n\nnarwhalbatross\n", encoding="utf-8"
    )
    (harness.root / "notes" / "reading-list.txt").unlink()
    harness.start()
    wait_for(lambda: harness.status()["watcher"]["caught_up"], DEADLINE, "the catch-up")
    found = paths(harness)
    assert "notes/offline.md" in found
    assert "notes/reading-list.txt" not in found
    assert "notes/offline.md" in top_paths(harness, "narwhalbatross")
    wait_for(lambda: all_embedded(harness), EMBED_DEADLINE, "the caught-up note's vector", 1)


def test_a_daemon_on_a_folder_never_indexed_indexes_nothing() -> None:
    h = Harness()  # the sample vault, not indexed
    try:
        h.start()
        wait_for(lambda: h.status()["watcher"]["caught_up"], DEADLINE, "the catch-up")
        assert paths(h) == set()
    finally:
        h.close()


@pytest.mark.slow
def test_a_burst_of_500_files_created_then_deleted(daemon: Harness) -> None:
    burst = daemon.root / "burst"
    burst.mkdir()
    before = paths(daemon)
    for i in range(500):
        (burst / f"b{i:03d}.md").write_text(f"# Burst {i}\n\nburstword {i}\n", encoding="utf-8")

    def all_in() -> bool:
        return sum(1 for p in paths(daemon) if p.startswith("burst/")) == 500

    wait_for(all_in, 300, "500 created files to be indexed", interval=1)
    for i in range(500):
        (burst / f"b{i:03d}.md").unlink()
    wait_for(lambda: paths(daemon) == before, 300, "500 deleted files to vanish", interval=1)

    # Created and deleted before the watcher could index them: nothing may remain.
    for i in range(500):
        (burst / f"c{i:03d}.md").write_text(f"# C {i}\n", encoding="utf-8")
    for i in range(500):
        (burst / f"c{i:03d}.md").unlink()
    marker = daemon.root / "marker.md"
    marker.write_text("# Marker\n\nafterburst\n", encoding="utf-8")
    wait_for(lambda: "marker.md" in paths(daemon), 120, "the marker after the burst")
    daemon.cli("status", "-f", "json")
    wait_for(lambda: daemon.status()["queue"]["writer_jobs"] == 0, 120, "an idle writer")
    assert paths(daemon) == before | {"marker.md"}


def backfill_pids(h: Harness) -> list[int]:
    workers = h.status()["embedder"]["workers"]
    return [w["pid"] for w in workers if w["role"] == "backfill"]


def test_the_backfill_worker_is_closed_once_idle_and_comes_back(harness: Harness) -> None:
    """The backfill worker (a second copy of the model) stayed loaded after
    the backlog was done. Now it is closed after its idle time (here 1 s) and started again
    when new chunks need vectors."""
    harness.env["TSM_BACKFILL_IDLE_SECONDS"] = "1"
    harness.start("--no-watch")
    for name, text in (
        ("egret", "# Egrets\n\nThe little egret stirs the mud with its yellow feet.\n"),
        ("avocet", "# Avocets\n\nThe avocet sweeps its upturned bill through shallow water.\n"),
    ):
        note = harness.root / "notes" / f"{name}.md"
        note.write_text(text, encoding="utf-8")
        assert harness.cli("index", "-f", "json", "--", str(note)).code == 0
        wait_for(lambda: all_embedded(harness), EMBED_DEADLINE, f"the {name}'s vector", 1)
        assert vector_top(harness, text.splitlines()[-1]) == f"notes/{name}.md"
        wait_for(lambda: not backfill_pids(harness), EMBED_DEADLINE, "the worker to close", 0.5)
    assert harness.status()["embedder"]["state"] == "ready"
