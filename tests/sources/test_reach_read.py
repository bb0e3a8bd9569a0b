"""Reach.read: a file is read only where its real path lies inside the index root, even
when a folder above it becomes a link out of the root between the check and the open (a
repository whose build script swaps `notes/` for a link to `~/private` in a loop while tsm
indexes). Real files, links and a real thread doing the swaps."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tsm.sources import SkipFile, load_bytes
from tsm.sources.files import Reach

CAP = 1024 * 1024


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "x.md").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("outside secret\n")
    return root, outside


def test_a_folder_linked_out_of_the_root_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    reach = Reach.of(root)
    assert reach.read(root / "d" / "x.md", CAP) == b"inside\n"
    (root / "d").rename(root / "d.old")
    (root / "d").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SkipFile, match="links outside the index root"):
        reach.read(root / "d" / "x.md", CAP)
    with pytest.raises(SkipFile, match="links outside the index root"):
        load_bytes(root / "d" / "x.md", CAP, reach)
    # a link inside the root is still followed to its file
    (root / "inner").symlink_to(root / "d.old", target_is_directory=True)
    assert reach.read(root / "inner" / "x.md", CAP) == b"inside\n"


def test_a_folder_swapped_for_a_link_meanwhile_never_leads_out(tree: tuple[Path, Path]) -> None:
    """The swap races the read: whatever the timing, the bytes are the inside file's or the
    read is refused (without read_beneath, an open by the whole path read the outside file
    in some of these reads)."""
    root, outside = tree
    reach = Reach.of(root)
    stop = threading.Event()

    def swap() -> None:
        real, aside = root / "d", root / "d.aside"
        while not stop.is_set():
            os.rename(real, aside)
            real.symlink_to(outside, target_is_directory=True)
            time.sleep(0.0002)
            real.unlink()
            os.rename(aside, real)
            time.sleep(0.0002)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    seen: set[bytes] = set()
    try:
        for _ in range(3000):
            try:
                seen.add(reach.read(root / "d" / "x.md", CAP))
            except SkipFile:
                seen.add(b"skipped")
    finally:
        stop.set()
        swapper.join()
    assert b"outside secret\n" not in seen, seen
    assert reach.read(root / "d" / "x.md", CAP) == b"inside\n"
