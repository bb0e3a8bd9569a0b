"""The Stop hook ingests only the user's own transcripts of this index root:
it hands tsm the `transcript_path` it was given, and `tsm ingest-session` refuses
another project's transcript, a link or another account's file, which the hook logs.

The real hook script, fed Claude Code's Stop input, runs the real tsm in a trusted vault.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from claude_home import project_dir
from plugin_harness import TSM, base_env, claude_input, log_lines, needs_tsm, run_hook, trust

pytestmark = needs_tsm

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"
NO_VECTORS = {"TSM_EMBEDDER": "none"}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    (folder / "tsm.toml").write_text("", encoding="utf-8")
    trust(folder)
    return folder


def stop(vault: Path, transcript: Path) -> list[str]:
    """Run the Stop hook for `transcript`; the hook log's lines."""
    assert TSM is not None
    payload = claude_input("Stop", vault, stop_hook_active=False)
    payload["transcript_path"] = str(transcript)
    run = run_hook("stop", payload, env=base_env(TSM_BIN=TSM, **NO_VECTORS), cwd=vault, timeout=300)
    assert run.returncode == 0 and run.stdout == b"", run.stderr
    return log_lines(vault / ".tsm")


def sessions(vault: Path) -> list[str]:
    assert TSM is not None
    done = subprocess.run(
        [TSM, "list", "--type", "session", "-f", "json"],
        cwd=vault,
        env=base_env(**NO_VECTORS),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [d["path"] for d in json.loads(done.stdout)]


def test_this_projects_transcript_is_ingested(vault: Path) -> None:
    transcript = project_dir(vault) / "9f2c1e4a.jsonl"
    shutil.copy(FIXTURE, transcript)
    assert stop(vault, transcript) == []
    assert [Path(p).name for p in sessions(vault)] == ["9f2c1e4a.jsonl"]


def test_another_projects_transcript_is_not(vault: Path, tmp_path: Path) -> None:
    other = project_dir(tmp_path / "other-project") / "secret.jsonl"
    shutil.copy(FIXTURE, other)
    (line,) = stop(vault, other)
    assert f"{other} is not a transcript of this index root" in line
    assert sessions(vault) == []


def test_a_link_to_another_projects_transcript_is_not(vault: Path, tmp_path: Path) -> None:
    other = project_dir(tmp_path / "other-project") / "secret.jsonl"
    shutil.copy(FIXTURE, other)
    link = project_dir(vault) / "link.jsonl"
    link.symlink_to(other)
    (line,) = stop(vault, link)
    assert f"{link} is a symbolic link" in line
    assert sessions(vault) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_transcript_is_not(vault: Path) -> None:
    theirs = project_dir(vault) / "theirs.jsonl"
    shutil.copy(FIXTURE, theirs)
    os.chown(theirs, 65534, 65534)  # nobody
    (line,) = stop(vault, theirs)
    assert f"{theirs} belongs to another user" in line
    assert sessions(vault) == []
