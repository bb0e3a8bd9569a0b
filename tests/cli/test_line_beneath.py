"""The human listing's line number for a hit is read from the index root down with no link
followed: a folder swapped for a link out of the root after indexing made it read the file
of that name outside (render/human_format.looked_up_line). Through the real CLI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

NOTE = "notes/git-install.md"


def test_a_folder_swapped_for_a_link_out_of_the_root_is_not_read_for_a_line(
    indexed: Path, tsm: Any, tmp_path: Path
) -> None:
    listed = tsm("search", "install git", "--fts-only", "-f", "human")
    assert listed.code == 0, listed.err
    line = re.search(re.escape(NOTE) + r":(\d+)", listed.out)
    assert line, listed.out  # read from the note itself: a line is shown

    outside = tmp_path / "outside"
    shutil.copytree(indexed / "notes", outside)
    text = (outside / "git-install.md").read_text(encoding="utf-8")
    (outside / "git-install.md").write_text("\n" * 500 + text, encoding="utf-8")
    shutil.rmtree(indexed / "notes")
    (indexed / "notes").symlink_to(outside, target_is_directory=True)

    swapped = tsm("search", "install git", "--fts-only", "-f", "human")
    assert swapped.code == 0, swapped.err
    shown = [int(n) for n in re.findall(re.escape(NOTE) + r":(\d+)", swapped.out)]
    assert all(n < 500 for n in shown), swapped.out  # nothing read from the file outside
