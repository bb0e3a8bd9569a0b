"""The hooks' pure parts: what the prompt hook prints of tsm's answer, paths, workspace
discovery, the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _common import HookFailure, find_workspace, log_failure, read_hook_input
from post_tool_use import index_command, path_in_root
from stop import ingest_command
from user_prompt_submit import checked_output

# --- what tsm answers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stdout",
    [
        "not json",
        "[]",
        '{"results": null}',
        '{"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}}',
        '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit"}}',
        '"x"',
    ],
)
def test_bad_tsm_output_is_a_failure(stdout: str) -> None:
    with pytest.raises(HookFailure):
        checked_output(stdout)


def test_tsm_printing_nothing_means_injecting_nothing() -> None:
    assert checked_output("") is None and checked_output("\n") is None


def test_the_hook_prints_tsms_answer_as_it_is() -> None:
    specific = {"hookEventName": "UserPromptSubmit", "additionalContext": "<k/> 狩猟"}
    line = json.dumps({"hookSpecificOutput": specific}, ensure_ascii=False) + "\n"
    assert checked_output(line) == line


# --- PostToolUse and Stop -------------------------------------------------------------------


def test_path_in_root(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.md").write_text("x")
    assert path_in_root(root / "sub" / "a.md", root) == Path("sub/a.md")
    assert path_in_root(tmp_path / "elsewhere.md", root) is None
    assert path_in_root(tmp_path / "vault-sibling" / "a.md", root) is None


def test_path_in_root_sees_through_a_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "notes").mkdir(parents=True)
    (real / "notes" / "a.md").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert path_in_root(real / "notes" / "a.md", link) == Path("notes/a.md")
    assert path_in_root(link / "notes" / "a.md", real) == Path("notes/a.md")


def test_index_and_ingest_command_lines() -> None:
    assert index_command(Path("notes/a.md")) == ["index", "-f", "json", "--", "notes/a.md"]
    assert ingest_command(Path("/t/s.jsonl")) == [
        "ingest-session",
        "-f",
        "json",
        "--",
        "/t/s.jsonl",
    ]


# --- workspace discovery (CONTRACT.md "Workspace and configuration") --------------------------


def test_workspace_defaults_to_cwd_and_is_unconfigured(tmp_path: Path) -> None:
    ws = find_workspace(tmp_path, {})
    assert (ws.root, ws.state_dir, ws.configured) == (tmp_path, tmp_path / ".tsm", False)


def test_a_state_dir_or_tsm_toml_alone_is_not_the_user_setting_tsm_up(tmp_path: Path) -> None:
    """A cloned repository can ship both (README "Trust model")."""
    (tmp_path / ".tsm").mkdir()
    (tmp_path / "tsm.toml").write_text("")
    ws = find_workspace(tmp_path / ".tsm", {"HOME": str(tmp_path / "home")})
    assert (ws.root, ws.configured) == (tmp_path, False)


def test_a_trusted_root_is_configured(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    (tmp_path / "inner" / "deeper").mkdir(parents=True)
    xdg = tmp_path / "xdg" / "tsm"
    xdg.mkdir(parents=True)
    (xdg / "trusted-roots.txt").write_text(f"{tmp_path}\n")
    ws = find_workspace(tmp_path / "inner" / "deeper", {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert (ws.root, ws.state_dir, ws.configured) == (tmp_path, tmp_path / ".tsm", True)


def test_nearest_tsm_toml_above_cwd_is_the_root(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    (tmp_path / "inner" / "deeper").mkdir(parents=True)
    (tmp_path / "inner" / "tsm.toml").write_text("")
    ws = find_workspace(tmp_path / "inner" / "deeper", {})
    assert ws.root == tmp_path / "inner"
    assert ws.state_dir == tmp_path / "inner" / ".tsm"


def test_environment_wins_over_tsm_toml(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    elsewhere = tmp_path / "elsewhere"
    ws = find_workspace(tmp_path, {"TSM_INDEX_ROOT": str(elsewhere)})
    assert (ws.root, ws.state_dir, ws.configured) == (elsewhere, elsewhere / ".tsm", True)
    state = tmp_path / "state"
    ws = find_workspace(tmp_path, {"TSM_STATE_DIR": str(state)})
    assert (ws.root, ws.state_dir, ws.configured) == (tmp_path, state, False)


def test_a_db_path_alone_does_not_trust_the_root(tmp_path: Path) -> None:
    assert not find_workspace(tmp_path, {"TSM_DB_PATH": str(tmp_path / "x.db")}).configured


# --- input and log --------------------------------------------------------------------------


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data


@pytest.mark.parametrize("raw", [b"", b"\xff\xfe", b"{", b"[]", b"null", b'"prompt"', b"42"])
def test_hook_input_must_be_a_json_object(raw: bytes) -> None:
    with pytest.raises(HookFailure):
        read_hook_input(_Bytes(raw))  # type: ignore[arg-type]


def test_hook_input_object_is_returned() -> None:
    data: dict[str, Any] = {"prompt": "狩猟", "cwd": "/x"}
    assert read_hook_input(_Bytes(json.dumps(data).encode())) == data  # type: ignore[arg-type]


def test_log_lines_are_single_timestamped_lines(tmp_path: Path) -> None:
    ws = find_workspace(
        tmp_path, {"TSM_INDEX_ROOT": str(tmp_path), "TSM_STATE_DIR": str(tmp_path / "state")}
    )
    log_failure(ws, "stop", "first\nsecond   line")
    lines = (tmp_path / "state" / "logs" / "hooks.log").read_text().splitlines()
    assert len(lines) == 1
    stamp, hook, message = lines[0].split(" ", 2)
    assert stamp[:4].isdigit() and "T" in stamp
    assert (hook, message) == ("stop:", "first\\nsecond   line")  # escaped, not collapsed


def test_the_log_rotates_instead_of_growing_forever(tmp_path: Path) -> None:
    ws = find_workspace(tmp_path, {"TSM_INDEX_ROOT": str(tmp_path), "TSM_STATE_DIR": str(tmp_path)})
    log = tmp_path / "logs" / "hooks.log"
    log.parent.mkdir()
    log.write_text("x" * 1_000_001)
    log_failure(ws, "stop", "fresh")
    assert log.read_text().endswith("stop: fresh\n")
    assert (tmp_path / "logs" / "hooks.log.1").stat().st_size == 1_000_001


def test_a_broken_log_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    log_failure(find_workspace(tmp_path, {"TSM_STATE_DIR": str(blocker)}), "stop", "lost")


def test_an_unconfigured_workspace_logs_to_stderr_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_failure(find_workspace(tmp_path, {}), "stop", "boom")
    assert "stop: boom" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
