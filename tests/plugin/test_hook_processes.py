"""Each hook as Claude Code runs it: a process fed the hook input JSON on stdin.

Whatever goes wrong, a hook prints nothing (or exactly one JSON object), exits 0, and leaves
one line in <state dir>/logs/hooks.log. Only the `tsm` process edge is replaced here, by
system commands (`false`, `echo`) or a recorder; real search results are tested against the
real CLI in test_hook_real_cli.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import HookRun, base_env, claude_input, log_lines, run_hook, trust

FALSE = shutil.which("false") or "/bin/false"
ECHO = shutil.which("echo") or "/bin/echo"
NOWHERE = "/nonexistent/bin/tsm"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    (path / "notes").mkdir(parents=True)
    (path / "notes" / "a.md").write_text("# A\n\nLoRa notes.\n", encoding="utf-8")
    trust(path)  # the user ran `tsm init` or `tsm trust` here
    return path


def env_for(state: Path, **overrides: str) -> dict[str, str]:
    return base_env(TSM_STATE_DIR=str(state), **overrides)


def prompt_input(vault: Path, prompt: Any) -> dict[str, Any]:
    return claude_input("UserPromptSubmit", vault, prompt=prompt)


def assert_silent(run: HookRun) -> None:
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""


def assert_failed_silently(run: HookRun, state: Path, *needles: str) -> str:
    """Silent exit 0 with exactly one new log line that mentions every needle."""
    assert_silent(run)
    lines = log_lines(state)
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in `tsm` that records its argv, cwd and stdin, then fails (exit 1)."""
    record = tmp_path / "record.json"
    script = tmp_path / "recorder"
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""\
            import json, os, sys
            with open({str(record)!r}, "w") as f:
                called = {{"argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": sys.stdin.read()}}
                json.dump(called, f)
            sys.exit(1)
            """
        )
    )
    script.chmod(0o755)
    return str(script), record


# --- UserPromptSubmit: skip rules -----------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    ["", "  ", "ok", "\n\t y", "<command-name>/clear</command-name>", " <system-reminder>x"],
)
def test_skipped_prompts_never_start_tsm(vault: Path, state: Path, prompt: str) -> None:
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, prompt),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_silent(run)
    assert log_lines(state) == []


def test_a_prompt_of_control_characters_only_is_skipped(vault: Path, state: Path) -> None:
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "\x00\x01\x02\x03"),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_silent(run)
    assert log_lines(state) == []


# --- UserPromptSubmit: bad input ------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json at all",
        b"\xff\xfe\x00\x01binary\x80\x81garbage",
        bytes(range(256)) * 4,
        b"[1, 2, 3]",
        b"null",
        b'{"prompt": "unterminated',
    ],
)
def test_garbage_stdin_is_logged(vault: Path, state: Path, raw: bytes) -> None:
    run = run_hook("user_prompt_submit", raw, env=env_for(state, TSM_BIN=NOWHERE), cwd=vault)
    assert_failed_silently(run, state, "user_prompt_submit:", "hook input")


@pytest.mark.parametrize("prompt", [None, 42, ["a list"], {"an": "object"}])
def test_a_missing_or_non_string_prompt_is_logged(vault: Path, state: Path, prompt: Any) -> None:
    payload = prompt_input(vault, prompt)
    if prompt is None:
        del payload["prompt"]
    run = run_hook("user_prompt_submit", payload, env=env_for(state, TSM_BIN=NOWHERE), cwd=vault)
    assert_failed_silently(run, state, "prompt")


def test_without_cwd_the_process_directory_is_used(vault: Path, state: Path) -> None:
    payload = {"prompt": "LoRa module comparison"}
    run = run_hook("user_prompt_submit", payload, env=env_for(state, TSM_BIN=NOWHERE), cwd=vault)
    assert_failed_silently(run, state, NOWHERE)


# --- UserPromptSubmit: a tsm that is missing, fails, lies or hangs ---------------------------


def test_missing_tsm_binary_is_logged(vault: Path, state: Path) -> None:
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module comparison"),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_failed_silently(run, state, "cannot run", NOWHERE)


def test_tsm_not_on_path_is_still_run(vault: Path, state: Path, tmp_path: Path) -> None:
    """Without tsm on PATH the hooks find the one beside them (this checkout's venv, or
    `python3 -m tsm`: test_find_tsm.py tries each way); this vault has no index, so the
    real tsm answers with its error, which is logged."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module comparison"),
        env=env_for(state, PATH=str(empty)),
        cwd=vault,
    )
    line = assert_failed_silently(run, state, "`tsm context` exited with")
    assert "cannot find tsm" not in line


def test_failing_tsm_is_logged(vault: Path, state: Path) -> None:
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module comparison"),
        env=env_for(state, TSM_BIN=FALSE),
        cwd=vault,
    )
    assert_failed_silently(run, state, "`tsm context` exited with 1")


def test_the_cli_error_object_is_what_gets_logged(vault: Path, state: Path, tmp_path: Path) -> None:
    script = tmp_path / "erroring"
    error = {"error": "no index here; run `tsm init`", "kind": "user_error"}
    script.write_text(
        f"#!/bin/sh\necho 'progress noise' >&2\necho '{json.dumps(error)}' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module comparison"),
        env=env_for(state, TSM_BIN=str(script)),
        cwd=vault,
    )
    assert_failed_silently(run, state, "user_error: no index here; run `tsm init`")


def test_non_json_from_tsm_is_logged(vault: Path, state: Path) -> None:
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module comparison"),
        env=env_for(state, TSM_BIN=ECHO),
        cwd=vault,
    )
    assert_failed_silently(run, state, "invalid JSON")


def test_a_hanging_tsm_is_killed_at_the_deadline(vault: Path, state: Path, tmp_path: Path) -> None:
    # The grandchild keeps the inherited stdout open, as a careless daemon start would. Were
    # either left running, run_hook would wait for their 600 s and fail at its own deadline.
    script = tmp_path / "hanging"
    script.write_text("#!/bin/sh\nsleep 600 &\nsleep 600\n")
    script.chmod(0o755)
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module comparison"),
        env=env_for(state, TSM_BIN=str(script), TSM_HOOK_TIMEOUT="0.5"),
        cwd=vault,
    )
    assert_failed_silently(run, state, "timed out after 0.5s")


def test_tsm_context_runs_in_the_index_root_with_the_hook_input(
    vault: Path, state: Path, recorder: tuple[str, Path]
) -> None:
    """The hook hands Claude Code's input to `tsm context` on stdin, whole: the query, the
    thresholds (TSM_INJECT_*, in its environment) and the XML are tsm's."""
    script, record = recorder
    payload = prompt_input(vault, "  LoRa\n module  comparison ")
    run = run_hook(
        "user_prompt_submit",
        payload,
        env=env_for(state, TSM_BIN=script, TSM_INJECT_TOP_K="3"),
        cwd=Path("/"),
    )
    assert_failed_silently(run, state, "exited with 1")
    called = json.loads(record.read_text())
    assert called["argv"] == ["context"]
    assert json.loads(called["stdin"]) == payload
    assert Path(called["cwd"]).resolve() == vault.resolve()


def test_a_100kb_prompt_reaches_tsm_whole_as_json(
    vault: Path, state: Path, recorder: tuple[str, Path]
) -> None:
    """tsm cuts the query (core/context.py, tests/cli/test_context_cli.py)."""
    script, record = recorder
    prompt = "LoRa module comparison please\n" + "pasted log line 0123456789\n" * 4_000
    assert len(prompt.encode()) > 100_000
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, prompt),
        env=env_for(state, TSM_BIN=script),
        cwd=vault,
    )
    assert_failed_silently(run, state)
    assert json.loads(json.loads(record.read_text())["stdin"])["prompt"] == prompt


def test_a_100kb_prompt_with_tsm_missing_is_logged(vault: Path, state: Path) -> None:
    prompt = "狩猟の記録" * 20_000 + "\x00" + "🦊" * 1_000
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, prompt),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_failed_silently(run, state, NOWHERE)


# --- where failures are logged, and where the hooks stay out ---------------------------------


def test_an_unconfigured_directory_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name, payload in [
        ("user_prompt_submit", claude_input("UserPromptSubmit", project, prompt="LoRa module")),
        (
            "post_tool_use",
            claude_input(
                "PostToolUse",
                project,
                tool_name="Write",
                tool_input={"file_path": str(project / "x.md")},
            ),
        ),
        (
            "stop",
            claude_input(
                "Stop", project, stop_hook_active=False, transcript_path=str(tmp_path / "t.jsonl")
            ),
        ),
    ]:
        (project / "x.md").write_text("x")
        (tmp_path / "t.jsonl").write_text("{}\n")
        run = run_hook(name, payload, env=base_env(TSM_BIN=NOWHERE), cwd=project)
        assert_silent(run)
        assert run.stderr == b""
    assert sorted(p.name for p in project.iterdir()) == ["x.md"]


def test_failures_outside_a_workspace_go_to_stderr_only(tmp_path: Path) -> None:
    run = run_hook("user_prompt_submit", b"garbage", env=base_env(TSM_BIN=NOWHERE), cwd=tmp_path)
    assert_silent(run)
    assert b"hook input is not JSON" in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_log_lives_in_the_state_dir_of_the_nearest_tsm_toml(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    trust(tmp_path)
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    run = run_hook(
        "user_prompt_submit",
        prompt_input(inner, "LoRa module"),
        env=base_env(TSM_BIN=NOWHERE),
        cwd=inner,
    )
    assert_failed_silently(run, tmp_path / ".tsm", NOWHERE)


def test_the_log_lives_under_tsm_index_root(tmp_path: Path, vault: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module"),
        env=base_env(TSM_BIN=NOWHERE, TSM_INDEX_ROOT=str(root)),
        cwd=vault,
    )
    assert_failed_silently(run, root / ".tsm", NOWHERE)


def test_an_unwritable_log_still_exits_0(vault: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    run = run_hook(
        "user_prompt_submit",
        prompt_input(vault, "LoRa module"),
        env=base_env(TSM_BIN=NOWHERE, TSM_STATE_DIR=str(blocker)),
        cwd=vault,
    )
    assert_silent(run)


# --- PostToolUse ----------------------------------------------------------------------------


def edit_input(vault: Path, file_path: str, tool: str = "Edit") -> dict[str, Any]:
    tool_input: dict[str, Any] = {"file_path": file_path}
    if tool == "Write":
        tool_input["content"] = "# A\n"
    elif tool == "MultiEdit":
        tool_input["edits"] = [{"old_string": "A", "new_string": "B"}]
    else:
        tool_input.update(old_string="A", new_string="B", replace_all=False)
    return claude_input(
        "PostToolUse",
        vault,
        tool_name=tool,
        tool_input=tool_input,
        tool_response={"filePath": file_path, "success": True},
        tool_use_id="toolu_01ABC",
    )


@pytest.mark.parametrize("tool", ["Edit", "Write", "MultiEdit"])
def test_an_edited_note_in_the_root_is_reindexed(
    vault: Path, state: Path, recorder: tuple[str, Path], tool: str
) -> None:
    script, record = recorder
    run = run_hook(
        "post_tool_use",
        edit_input(vault, str(vault / "notes" / "a.md"), tool),
        env=env_for(state, TSM_BIN=script),
        cwd=vault,
    )
    assert_failed_silently(run, state, "post_tool_use:", "`tsm index` exited with 1")
    called = json.loads(record.read_text())
    assert called["argv"] == ["index", "-f", "json", "--", os.path.join("notes", "a.md")]
    assert Path(called["cwd"]).resolve() == vault.resolve()


def test_a_relative_file_path_is_taken_from_the_session_cwd(
    vault: Path, state: Path, recorder: tuple[str, Path]
) -> None:
    script, record = recorder
    run_hook(
        "post_tool_use",
        edit_input(vault, "notes/a.md"),
        env=env_for(state, TSM_BIN=script),
        cwd=Path("/"),
    )
    assert json.loads(record.read_text())["argv"][-1] == os.path.join("notes", "a.md")


@pytest.mark.parametrize("suffix", [".markdown", ".txt", ".pdf", ".MD"])
def test_every_indexable_suffix_is_reindexed(vault: Path, state: Path, suffix: str) -> None:
    path = vault / f"doc{suffix}"
    path.write_bytes(b"x")
    run = run_hook(
        "post_tool_use", edit_input(vault, str(path)), env=env_for(state, TSM_BIN=FALSE), cwd=vault
    )
    assert_failed_silently(run, state, "`tsm index`")


@pytest.mark.parametrize("name", ["script.py", "data.json", "Makefile", "notes"])
def test_other_files_are_ignored(vault: Path, state: Path, name: str) -> None:
    path = vault / name
    if not path.exists():
        path.write_text("x")
    run = run_hook(
        "post_tool_use",
        edit_input(vault, str(path)),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_silent(run)
    assert log_lines(state) == []


def test_files_outside_the_root_are_ignored(vault: Path, state: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("x")
    for path in [str(outside), str(vault / ".." / "outside.md"), "../outside.md"]:
        run = run_hook(
            "post_tool_use", edit_input(vault, path), env=env_for(state, TSM_BIN=NOWHERE), cwd=vault
        )
        assert_silent(run)
    assert log_lines(state) == []


def test_a_file_that_does_not_exist_is_ignored(vault: Path, state: Path) -> None:
    run = run_hook(
        "post_tool_use",
        edit_input(vault, str(vault / "gone.md")),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_silent(run)
    assert log_lines(state) == []


@pytest.mark.parametrize(
    "tool_input", [None, {}, {"file_path": 7}, {"file_path": ""}, "notes/a.md"]
)
def test_post_tool_use_without_a_file_path_is_logged(
    vault: Path, state: Path, tool_input: Any
) -> None:
    payload = edit_input(vault, "x")
    payload["tool_input"] = tool_input
    run = run_hook("post_tool_use", payload, env=env_for(state, TSM_BIN=NOWHERE), cwd=vault)
    assert_failed_silently(run, state, "tool_input.file_path")


def test_post_tool_use_garbage_stdin_is_logged(vault: Path, state: Path) -> None:
    run = run_hook("post_tool_use", b"\x00\xff{", env=env_for(state, TSM_BIN=NOWHERE), cwd=vault)
    assert_failed_silently(run, state, "post_tool_use:", "hook input")


def test_post_tool_use_missing_tsm_is_logged(vault: Path, state: Path) -> None:
    run = run_hook(
        "post_tool_use",
        edit_input(vault, str(vault / "notes" / "a.md")),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_failed_silently(run, state, "cannot run", NOWHERE)


# --- Stop -----------------------------------------------------------------------------------


def stop_input(vault: Path, transcript: Any) -> dict[str, Any]:
    payload = claude_input("Stop", vault, stop_hook_active=False)
    payload["transcript_path"] = transcript
    return payload


def test_the_transcript_is_ingested(
    vault: Path, state: Path, tmp_path: Path, recorder: tuple[str, Path]
) -> None:
    script, record = recorder
    transcript = tmp_path / "projects" / "abc.jsonl"
    transcript.parent.mkdir()
    transcript.write_text("{}\n")
    run = run_hook(
        "stop", stop_input(vault, str(transcript)), env=env_for(state, TSM_BIN=script), cwd=vault
    )
    assert_failed_silently(run, state, "stop:", "`tsm ingest-session` exited with 1")
    called = json.loads(record.read_text())
    assert called["argv"] == ["ingest-session", "-f", "json", "--", str(transcript)]
    assert Path(called["cwd"]).resolve() == vault.resolve()


def test_a_missing_transcript_is_ignored(vault: Path, state: Path, tmp_path: Path) -> None:
    run = run_hook(
        "stop",
        stop_input(vault, str(tmp_path / "gone.jsonl")),
        env=env_for(state, TSM_BIN=NOWHERE),
        cwd=vault,
    )
    assert_silent(run)
    assert log_lines(state) == []


@pytest.mark.parametrize("transcript", [None, 3, ""])
def test_stop_without_a_transcript_path_is_logged(
    vault: Path, state: Path, transcript: Any
) -> None:
    run = run_hook(
        "stop", stop_input(vault, transcript), env=env_for(state, TSM_BIN=NOWHERE), cwd=vault
    )
    assert_failed_silently(run, state, "transcript_path")


def test_stop_failing_tsm_is_logged(vault: Path, state: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("{}\n")
    run = run_hook(
        "stop", stop_input(vault, str(transcript)), env=env_for(state, TSM_BIN=FALSE), cwd=vault
    )
    assert_failed_silently(run, state, "`tsm ingest-session` exited with 1")


def test_stop_garbage_stdin_is_logged(vault: Path, state: Path) -> None:
    run = run_hook("stop", b"", env=env_for(state, TSM_BIN=NOWHERE), cwd=vault)
    assert_failed_silently(run, state, "stop:", "hook input")
