"""Texts embedded twice when `tsm index` embeds in its own process and a search starts a
daemon meanwhile (issue 31: 4,928 of 6,755 texts on an 880-file vault).

A vault of NOTES one-chunk notes is indexed without vectors (`tsm index --no-embed`); then
`tsm index` runs in-process to embed them, and a `tsm search` with autostart on starts a
daemon whose backfill finds the same chunks without a vector. When both are done, the
texts embedded are what `tsm index` reports plus what the daemon's backfill reports
(`tsm status`: queue.backfill.embedded_since_start); every one above the pending count was
embedded twice. The real CLI and daemon, with the index's configured model.

    .venv/bin/python bench/one_embedder.py --notes 5000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = (
    "index search vector keyword daemon model chunk note vault session query result "
    "embedding writer backfill watcher folder file heading section link tag status"
).split()


def tsm(env: dict[str, str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tsm", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=6 * 3600,
    )


def status(env: dict[str, str], root: Path) -> dict[str, Any]:
    done = tsm(env, root, "status", "-f", "json")
    return dict(json.loads(done.stdout))


def write_vault(root: Path, notes: int) -> None:
    folder = root / "notes"
    folder.mkdir(parents=True)
    for i in range(notes):
        words = " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(60))
        (folder / f"n{i:05}.md").write_text(f"# Note {i}\n\nNote {i} is about {words}.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=5000)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tsm1e", dir="/tmp"))
    root = base / "v"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_AUTOSTART": "0"}
    try:
        write_vault(root, args.notes)
        first = tsm(env, root, "index", "--no-embed", "-f", "json")
        assert first.returncode == 0, first.stderr
        pending = status(env, root)["chunks_without_vectors"]
        load_before = os.getloadavg()
        started = time.monotonic()
        index = subprocess.Popen(
            [sys.executable, "-m", "tsm", "index", "-f", "json"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2)  # `tsm index` has found no daemon and runs in-process
        search = tsm(env | {"TSM_AUTOSTART": "1"}, root, "search", "note", "-f", "json")
        assert search.returncode == 0, search.stderr
        out, err = index.communicate()
        assert index.returncode == 0, err
        index_done = time.monotonic() - started
        by_index = int(json.loads(out)["embedded"])
        while True:
            now = status(env, root)
            queue = now["queue"]
            if queue["chunks_without_vectors"] == 0 and queue["backfill"]["state"] == "idle":
                break
            time.sleep(2)
        all_done = time.monotonic() - started
        by_daemon = int(queue["backfill"]["embedded_since_start"])
        twice = by_index + by_daemon - pending
        load_after = os.getloadavg()
        print(
            f"| {args.notes} | {pending} | {by_index} | {by_daemon} | {twice} "
            f"| {index_done:.0f} | {all_done:.0f} "
            f"| {load_before[0]:.1f} / {load_after[0]:.1f} |"
        )
    finally:
        tsm(env, root, "stop", "-f", "json")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
