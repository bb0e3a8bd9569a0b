"""The daemon's watcher and writer against files that are not files: a
FIFO, a link to /dev/zero or out of the root, an undecodable name created while it runs must
not wedge the single writer; a normal edit made after them is still indexed."""

from __future__ import annotations

import os
from pathlib import Path

from daemon_harness import Harness, wait_for

DEADLINE = 30


def paths(h: Harness) -> set[str]:
    result = h.cli("list", "-f", "json")
    assert result.code == 0, result.err
    return {d["path"] for d in result.json()}


def top_paths(h: Harness, query: str) -> list[str]:
    result = h.cli("search", query, "--fts-only", "-f", "json")
    assert result.code == 0, result.err
    return [r["source"]["path"] for r in result.json()["results"]]


def test_fifo_and_links_out_do_not_wedge_the_writer(daemon: Harness, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nzorillapine\n", encoding="utf-8")
    secret.chmod(0o600)
    notes = daemon.root / "notes"
    wait_for(lambda: daemon.status()["watcher"]["caught_up"], DEADLINE, "the catch-up")
    os.mkfifo(notes / "pipe.md")  # reading it blocked the writer for ever
    (notes / "zero.md").symlink_to("/dev/zero")
    (notes / "leak.md").symlink_to(secret)
    with open(os.path.join(os.fsencode(notes), b"odd-\xff.md"), "wb") as fh:
        fh.write(b"# Odd\n\nzorillapine\n")
    # watchfiles cannot watch a tree holding a folder whose name is not UTF-8: it raises
    # (a batch lost) and then fails to start again; the watcher falls back to scanning
    os.mkdir(os.path.join(os.fsencode(daemon.root), b"dir-\xfe"))

    note = notes / "after.md"
    note.write_text("# After\n\nquetzalcoati\n", encoding="utf-8")
    wait_for(
        lambda: "notes/after.md" in top_paths(daemon, "quetzalcoati"),
        DEADLINE,
        "an edit after the FIFO to be searchable",
    )
    wait_for(lambda: daemon.status()["queue"]["writer_jobs"] == 0, DEADLINE, "an idle writer")
    assert top_paths(daemon, "zorillapine") == []
    assert not {"notes/pipe.md", "notes/zero.md", "notes/leak.md"} & paths(daemon)

    # `tsm index` through the daemon reports them and returns
    result = daemon.cli("index", "-f", "json", "--no-embed", timeout=60)
    assert result.code == 0, result.err
    reasons = {s["path"]: s["reason"] for s in result.json()["skipped"]}
    assert reasons["notes/pipe.md"] == "not a regular file: a FIFO"
    assert reasons["notes/zero.md"].startswith("links outside the index root")
    assert reasons["notes/leak.md"].startswith("links outside the index root")
    assert reasons["notes/odd-\\xff.md"].startswith("file name is not valid UTF-8")
