"""A daemon in a root the user has not trusted checks tsm.toml's folders when it starts; the
file system may change after that (a `git pull` that turns a content dir into a link out of
the root). Its watcher must not walk and index that folder by the settings of its start."""

from __future__ import annotations

import json
import os
from pathlib import Path

from daemon_harness import Harness, wait_for

DEADLINE = 30
SECRET = "quixotrelsecret"


def test_a_content_dir_turned_into_a_link_out_is_not_indexed_by_the_watcher(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "diary.md").write_text(f"# Diary\n\n{SECRET}\n", encoding="utf-8")
    h = Harness(environ={**os.environ, "TSM_EMBEDDER": "none"})
    try:
        del h.env["TSM_INDEX_ROOT"]  # found by its tsm.toml, so not trusted
        (h.root / "tsm.toml").write_text('[[content_dirs]]\npath = "notes"\n')
        assert h.cli("index", "-f", "json", "--no-embed", timeout=120).code == 0
        h.start()
        assert json.loads(h.cli("status", "-f", "json").out)["trusted"] is False
        wait_for(lambda: h.status()["watcher"]["caught_up"], DEADLINE, "the catch-up")
        notes = h.root / "notes"
        notes.rename(h.root / "notes-old")
        notes.symlink_to(outside, target_is_directory=True)
        (outside / "diary.md").touch()
        (h.root / "notes-old" / "new.md").write_text("# New\n\nwakeup\n", encoding="utf-8")

        def exited() -> bool:
            return h.proc is not None and h.proc.poll() is not None

        # the watcher sees the change: the daemon of the old settings indexed the diary
        # through the link (before the fix); now it steps aside and indexes nothing
        wait_for(lambda: exited() or stored(h), DEADLINE, "an exit")
        assert not stored(h)
        assert exited()
        found = h.cli("search", SECRET, "--fts-only", "-f", "json")
        assert found.code == 0, found.err
        assert found.json()["results"] == []
    finally:
        h.close()


def stored(h: Harness) -> bool:
    """Whether the secret is in the index (its DB or WAL), read without a tsm process."""
    return any(
        SECRET.encode() in path.read_bytes() for path in h.state.glob("tsm.db*") if path.is_file()
    )
