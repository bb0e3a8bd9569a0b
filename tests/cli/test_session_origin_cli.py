"""`tsm ingest-session` reads only the user's own transcripts of this index root: in the
folder Claude Code keeps for the root or a folder inside it, or in a sessions folder.
Another project's transcript, another account's file or a link is one line, exit 1, and
nothing of it is searchable."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from claude_home import project_dir

from tsm.sources.session_origin import project_folder_name

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"
NO_VECTORS = {"TSM_EMBEDDER": "none"}
WORD = "ZQCANARY"  # only the refused transcripts hold it


def planted(folder: Path, name: str = "other.jsonl") -> Path:
    """The fixture transcript with WORD in it, at folder/name."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FIXTURE.read_text(encoding="utf-8").replace("LoRa", WORD), encoding="utf-8")
    return path


def refused(tsm: Any, path: Path, why: str) -> None:
    """Exit 1 with one line naming the file and `why`, and WORD is nowhere in the index."""
    result = tsm("ingest-session", str(path), "-f", "json", env=NO_VECTORS)
    assert result.code == 1 and result.out == "", (result.out, result.err)
    error = result.error()
    assert error["kind"] == "user_error" and "Traceback" not in result.err
    assert error["error"].startswith(f"{path} {why}"), error
    found = tsm("search", WORD, "--fts-only", "-f", "json", env=NO_VECTORS)
    assert found.code != 0 or found.json()["results"] == [], found.out


def ingested(tsm: Any, path: Path) -> None:
    result = tsm("ingest-session", str(path), "-f", "json", env=NO_VECTORS)
    assert result.code == 0, result.err
    assert result.json()["indexed"] == 1


def test_another_projects_transcript_is_refused(vault: Path, tsm: Any, tmp_path: Path) -> None:
    other = planted(project_dir(tmp_path / "other-project"))
    refused(tsm, other, "is not a transcript of this index root")
    elsewhere = planted(tmp_path / "downloads")
    refused(tsm, elsewhere, "is not a transcript of this index root")


def test_a_sibling_whose_name_continues_the_roots_is_another_project(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """Claude Code's folder names are lossy: `vault-old` and `vault/old` give one name."""
    (tmp_path / "vault-old").mkdir()
    refused(tsm, planted(project_dir(tmp_path / "vault-old")), "is not a transcript")
    # A folder `old` inside the root has that name too: the sessions run there are this
    # root's, and the name cannot tell them from the sibling's.
    (vault / "old").mkdir()
    ingested(tsm, project_dir(tmp_path / "vault-old") / "other.jsonl")


def test_a_session_in_a_folder_inside_the_root_is_read(vault: Path, tsm: Any) -> None:
    inner = vault / "notes" / "my_project.v2"
    inner.mkdir(parents=True)
    transcript = project_dir(inner) / "s.jsonl"
    shutil.copy(FIXTURE, transcript)
    ingested(tsm, transcript)


def test_a_root_whose_name_claude_code_cuts_and_hashes(
    tmp_path: Path, tsm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 200 characters Claude Code cuts the folder name and adds a hash of the path."""
    root = tmp_path / ("n" * 100) / ("o" * 100)
    root.mkdir(parents=True)
    monkeypatch.setenv("TSM_INDEX_ROOT", str(root))
    name = project_folder_name(os.path.realpath(root))
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    transcript = projects / name / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, transcript)
    ingested(tsm, transcript)
    cut = name[:200]  # the name without its hash: no folder Claude Code would make
    refused(tsm, planted(projects / cut), "is not a transcript of this index root")


def test_a_link_in_the_projects_folder_is_refused(vault: Path, tsm: Any, tmp_path: Path) -> None:
    other = planted(project_dir(tmp_path / "other-project"))
    link = project_dir(vault) / "link.jsonl"
    link.symlink_to(other)
    refused(tsm, link, "is a symbolic link")
    folder_link = project_dir(vault).parent / (project_dir(vault).name + "-sub")
    (vault / "sub").mkdir()
    folder_link.symlink_to(other.parent)  # a folder of this root's name leading elsewhere
    refused(tsm, folder_link / other.name, "is not a transcript of this index root")


def test_a_transcript_in_a_sessions_folder_is_read(vault: Path, tsm: Any, tmp_path: Path) -> None:
    sessions = tmp_path / "exported-sessions"
    transcript = planted(sessions)
    refused(tsm, transcript, "is not a transcript of this index root")
    (vault / "tsm.toml").write_text(f'[sessions]\ndirs = ["{sessions}"]\n', encoding="utf-8")
    ingested(tsm, transcript)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_file_is_refused(vault: Path, tsm: Any) -> None:
    theirs = planted(project_dir(vault), "theirs.jsonl")
    os.chown(theirs, 65534, 65534)  # nobody
    refused(tsm, theirs, "belongs to another user")
