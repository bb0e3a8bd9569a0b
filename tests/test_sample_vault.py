"""The tests' copy of the sample vault holds its tracked files only: an index, a socket or a
note left in the checkout (by `./scripts/demo`, an editor, a daemon) never reaches a test."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sample_vault import copy_tracked


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_only_tracked_files_are_copied(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    vault = checkout / "examples" / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "kept.md").write_text("# Kept\n")
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    (vault / "notes" / "litter.md").write_text("# Untracked\n")
    (vault / ".tsm").mkdir()
    (vault / ".tsm" / "tsm.db").write_bytes(b"an index from a demo run")

    copy = copy_tracked(tmp_path / "copy", source=vault)

    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*")) == [
        "notes",
        "notes/kept.md",
    ]


def test_the_vault_fixture_holds_no_index(vault: Path) -> None:
    assert not (vault / ".tsm").exists()
    assert (vault / "notes" / "git-install.md").is_file()
