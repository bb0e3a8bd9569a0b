"""In a git work tree, a note with no date of its own is dated by its last commit, not by
the clone's mtime, so "last month" finds it in a fresh clone; `tsm info` says so. Without
git, or outside a work tree, the mtime as before; and nothing in the repository's git
config runs. Through the real CLI on real clones."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

LAST_MONTH = "2026-02-10T09:00:00+00:00"  # the tests' now is 2026-03-20 (tests/isolation.py)
EARLIER = "2025-11-02T09:00:00+00:00"


def git(cwd: Path, *args: str, when: str = LAST_MONTH) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
    }
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=m"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A repository: one note committed in November and changed last month, one committed
    last month, one with a frontmatter date."""
    repo = tmp_path / "origin"
    (repo / "docs").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "docs" / "old.md").write_text("# Old\n\nthe first draft of the kumquat plan\n")
    (repo / "docs" / "dated.md").write_text("---\ndate: 2024-05-01\n---\n# Dated\n\nkumquat\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first", when=EARLIER)
    (repo / "docs" / "old.md").write_text("# Old\n\nthe kumquat plan, revised\n")
    (repo / "docs" / "new.md").write_text("# New\n\nkumquat harvest notes\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    return repo


def clone(origin: Path, to: Path) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(to))
    return to


def info(tsm: Any, root: Path, rel: str, **env: str) -> dict[str, Any]:
    done = tsm("info", rel, "-f", "json", env={"TSM_INDEX_ROOT": str(root), **env})
    assert done.code == 0, done.err
    return dict(done.json())


def index(tsm: Any, root: Path, **env: str) -> None:
    done = tsm("index", "--no-embed", "-f", "json", env={"TSM_INDEX_ROOT": str(root), **env})
    assert done.code == 0, done.err


def test_a_clone_dates_notes_by_their_last_commit(tsm: Any, origin: Path, tmp_path: Path) -> None:
    root = clone(origin, tmp_path / "clone")
    (root / "docs" / "draft.md").write_text("# Draft\n\nkumquat, not committed\n")
    index(tsm, root)
    names = ("old.md", "new.md", "dated.md", "draft.md")
    dates = {rel: info(tsm, root, f"docs/{rel}") for rel in names}
    assert (dates["old.md"]["date"], dates["old.md"]["date_source"]) == ("2026-02-10", "git:commit")
    assert (dates["new.md"]["date"], dates["new.md"]["date_source"]) == ("2026-02-10", "git:commit")
    assert dates["dated.md"]["date_source"] == "frontmatter:date"
    assert dates["draft.md"]["date_source"] == "mtime"  # never committed
    found = tsm("search", "kumquat last month", "--fts-only", "-f", "json",
                env={"TSM_INDEX_ROOT": str(root)})  # fmt: skip
    assert found.code == 0, found.err
    paths = {r["source"]["path"] for r in found.json()["results"]}
    assert paths == {"docs/old.md", "docs/new.md"}


def test_a_root_inside_a_work_tree(tsm: Any, origin: Path, tmp_path: Path) -> None:
    root = clone(origin, tmp_path / "clone") / "docs"
    index(tsm, root)
    assert info(tsm, root, "new.md")["date_source"] == "git:commit"


def test_without_git_the_mtime(tsm: Any, origin: Path, tmp_path: Path) -> None:
    root = clone(origin, tmp_path / "clone")
    index(tsm, root, PATH=str(tmp_path / "no-bin"))
    assert info(tsm, root, "docs/new.md")["date_source"] == "mtime"


def test_nothing_in_the_repository_config_runs(tsm: Any, origin: Path, tmp_path: Path) -> None:
    """A clone's .git/config is the repository's: a signature check through gpg.program,
    an fsmonitor, a pager, an external diff and a textconv driver all name a program that
    leaves a mark when it runs. `git log` in that clone runs gpg.program (checked below)."""
    root = clone(origin, tmp_path / "clone")
    mark = tmp_path / "ran"
    program = tmp_path / "program.sh"
    program.write_text(f'#!/bin/sh\necho "$@" >> {mark}\nexit 1\n')
    program.chmod(0o755)
    _sign_head(root)
    for key, value in (
        ("log.showSignature", "true"),
        ("gpg.program", str(program)),
        ("core.fsmonitor", str(program)),
        ("core.pager", str(program)),
        ("pager.log", str(program)),
        ("diff.external", str(program)),
        ("diff.md.textconv", str(program)),
    ):
        git(root, "config", key, value)
    (root / ".git" / "info" / "attributes").write_text("*.md diff=md\n")
    subprocess.run(["git", "log", "-1"], cwd=root, capture_output=True, check=False)
    assert mark.exists(), "the planted config does run a program under a plain git log"
    mark.unlink()
    index(tsm, root)
    assert not mark.exists(), mark.read_text()
    assert info(tsm, root, "docs/new.md")["date_source"] == "git:commit"


def _sign_head(repo: Path) -> None:
    """Give HEAD a (bogus) signature, so that showing signatures runs gpg.program."""
    commit = git(repo, "cat-file", "commit", "HEAD")
    head, _, message = commit.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAAB\n -----END PGP SIGNATURE-----"
    signed = f"{head}\n{signature}\n\n{message}"
    path = repo / ".git" / "signed"
    path.write_text(signed)
    sha = git(repo, "hash-object", "-t", "commit", "-w", str(path)).strip()
    git(repo, "update-ref", "HEAD", sha)
