"""Claude Code's name for a project's transcripts folder, as its CLI computes it (2.1.197:
each character but an ASCII letter or digit a "-", counted in UTF-16 code units; past 200
characters cut and followed by a base-36 hash of the path). Expected values were computed
by that JavaScript function under node."""

from __future__ import annotations

import pytest

from tsm.sources.session_origin import project_folder_name

LONG = "/srv/" + "long-folder-name/" * 13 + "end"


@pytest.mark.parametrize(
    ("directory", "name"),
    [
        ("/home/u/my_notes.v2", "-home-u-my-notes-v2"),
        ("/tmp/😀x/狩猟", "-tmp---x---"),  # the emoji is two UTF-16 units: two dashes
        (LONG, "-srv" + "-long-folder-name" * 11 + "-long-fol-j5qpmc"),
    ],
)
def test_project_folder_name_is_claude_codes(directory: str, name: str) -> None:
    assert project_folder_name(directory) == name
