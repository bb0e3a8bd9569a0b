"""Every folder the walk cannot take is in `tsm index`'s `skipped` with its reason, and a
path that vanishes mid-run is a skip, never a failed run: through the real CLI on real
folders (one past PATH_MAX, folders renamed away by a loop beside the runs)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

NO_VECTORS = {"TSM_EMBEDDER": "none"}


def test_a_folder_past_path_max_is_listed_in_skipped(vault: Path, tsm: Any) -> None:
    """os.walk dropped the folder (and the note in it) without a word."""
    level, depth = "d" * 200, 25  # 25 x 201 bytes: past Linux's PATH_MAX of 4096
    fd = os.open(vault, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(level, dir_fd=fd)
            inner = os.open(level, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(note, b"# Deep\n\nA note past PATH_MAX.\n")
        os.close(note)
    finally:
        os.close(fd)
    result = tsm("index", "--no-embed", "-f", "json", env=NO_VECTORS)
    assert result.code == 0, result.err
    skipped = result.json()["skipped"]
    deep = [s for s in skipped if s["path"].startswith(level)]
    assert deep, skipped
    assert all(s["reason"] == "folder unreadable: File name too long" for s in deep), deep
    assert len(vault.joinpath(deep[0]["path"]).as_posix()) + len("/deep.md") > 4096


def record(n: int) -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": f"u{n}",
            "timestamp": "2026-03-13T08:00:00.000Z",
            "message": {"role": "user", "content": f"tell me about the weather number {n}"},
        }
    )


@contextmanager
def renamed_back_and_forth(folders: list[Path]) -> Iterator[None]:
    """While the block runs, every folder in turn is renamed away and back: a walk that
    listed its parent then finds some of them gone, and a read some of their files."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            for folder in folders:
                folder.rename(folder.with_name(folder.name + ".away"))
            for folder in folders:
                folder.with_name(folder.name + ".away").rename(folder)

    mover = threading.Thread(target=loop)
    mover.start()
    try:
        yield
    finally:
        stop.set()
        mover.join()


def test_transcript_and_note_folders_that_vanish_mid_run_are_skipped(vault: Path, tsm: Any) -> None:
    """A folder that vanished between the walk and the read made `tsm index` a system error
    ('cannot access …: No such file or directory', exit 2) instead of a skip."""
    folders = []
    for parent in ("logs", "notes"):
        for n in range(60):
            folder = vault / parent / f"f{n:02}"
            folder.mkdir(parents=True)
            (folder / "s.jsonl").write_text(record(n) + "\n", encoding="utf-8")
            (folder / "n.md").write_text(f"# Note {n}\n\nweather {n}\n", encoding="utf-8")
            folders.append(folder)
    (vault / "tsm.toml").write_text('[sessions]\ndirs = ["logs"]\n', encoding="utf-8")
    reasons = set()
    with renamed_back_and_forth(folders):
        for _ in range(6):
            result = tsm("index", "--no-embed", "-f", "json", env=NO_VECTORS)
            assert result.code == 0, result.err
            reasons |= {s["reason"] for s in result.json()["skipped"]}
    expected = {
        "folder gone while indexing (moved or deleted)",
        "unreadable: No such file or directory",
        "unreadable: No such file or directory; the indexed version is kept",
    }
    assert reasons <= expected, reasons
    assert reasons & {"folder gone while indexing (moved or deleted)"}, reasons
