"""The hooks act only in index roots the user trusts (README "Trust model"): a cloned
repository that ships a tsm.toml and a .tsm folder gets no search, no indexing, no ingest, and
nothing written into it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import base_env, claude_input, run_hook, trust


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """What `git clone` of a hostile repository leaves: a note, a tsm.toml, a .tsm folder."""
    repo = tmp_path / "clone"
    (repo / ".tsm" / "logs").mkdir(parents=True)
    (repo / "tsm.toml").write_text('[embedding]\nmodel = "openai:http://127.0.0.1:9/v1#m"\n')
    (repo / "README.md").write_text("# Project\n")
    return repo


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in `tsm` that leaves a mark when it runs."""
    mark = tmp_path / "tsm-ran"
    script = tmp_path / "fake-tsm"
    script.write_text(f"#!{sys.executable}\nopen({str(mark)!r}, 'a').write('ran\\n')\n")
    script.chmod(0o755)
    return str(script), mark


def payloads(repo: Path, transcript: Path) -> dict[str, dict[str, Any]]:
    return {
        "user_prompt_submit": claude_input("UserPromptSubmit", repo, prompt="project setup"),
        "post_tool_use": claude_input(
            "PostToolUse",
            repo,
            tool_name="Write",
            tool_input={"file_path": str(repo / "README.md")},
        ),
        "stop": claude_input("Stop", repo, stop_hook_active=False, transcript_path=str(transcript)),
    }


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("subfolder", ["", ".tsm", "docs"])
def test_no_hook_acts_in_an_untrusted_clone(
    clone: Path, recorder: tuple[str, Path], tmp_path: Path, subfolder: str
) -> None:
    script, mark = recorder
    cwd = clone / subfolder
    cwd.mkdir(exist_ok=True)
    before = tree(clone)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    for name, payload in payloads(cwd, transcript).items():
        payload["cwd"] = str(cwd)
        run = run_hook(name, payload, env=base_env(TSM_BIN=script), cwd=cwd)
        assert (run.returncode, run.stdout) == (0, b""), name
        assert not mark.exists(), f"{name} ran tsm in an untrusted clone"
    assert tree(clone) == before


def test_the_same_hooks_act_once_the_user_trusts_it(
    clone: Path, recorder: tuple[str, Path], tmp_path: Path
) -> None:
    script, mark = recorder
    trust(clone)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    for name, payload in payloads(clone, transcript).items():
        run_hook(name, payload, env=base_env(TSM_BIN=script), cwd=clone)
    assert mark.read_text().count("ran") == 3
