"""The watcher reflects creations, edits, deletions and renames within seconds, honours
.tsmignore, and leaves the index exactly right after a burst."""

from __future__ import annotations

import shutil

import pytest
from daemon_harness import Harness, wait_for

DEADLINE = 30  # generous for a loaded 2-core CI machine; a pass usually takes ~1 s


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
