"""plugin.json, hooks.json and marketplace.json: well-formed, consistent, pointing at real files.

`scripts/validate-plugin.sh` runs Claude Code's own `claude plugin validate --strict`; these
tests catch the same mistakes without Node, plus the ones the validator cannot see.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import HOOKS, PLUGIN, REPO, base_env, claude_input

SEMVER = re.compile(r"\d+\.\d+\.\d+")
KEBAB = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
EXPECTED_HOOKS = {
    "SessionStart": ("startup|resume|clear", "session_start.py"),
    "UserPromptSubmit": (None, "user_prompt_submit.py"),
    "PostToolUse": ("Edit|Write|MultiEdit", "post_tool_use.py"),
    "Stop": (None, "stop.py"),
}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def hook_commands() -> dict[str, dict[str, Any]]:
    """Event → its single command hook (with the group's matcher folded in)."""
    hooks = load(HOOKS / "hooks.json")["hooks"]
    found = {}
    for event, groups in hooks.items():
        assert len(groups) == 1, event
        (command,) = groups[0]["hooks"]
        found[event] = {**command, "matcher": groups[0].get("matcher")}
    return found


def test_plugin_manifest() -> None:
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert KEBAB.fullmatch(manifest["name"])
    assert SEMVER.fullmatch(manifest["version"])
    assert manifest["description"].strip()
    assert manifest["author"]["name"].strip()
    # hooks/hooks.json is loaded by convention; naming it again is a duplicate-load error.
    assert "hooks" not in manifest


def test_marketplace_lists_the_plugin_at_its_path() -> None:
    market = load(REPO / ".claude-plugin" / "marketplace.json")
    manifest = load(PLUGIN / ".claude-plugin" / "plugin.json")
    assert KEBAB.fullmatch(market["name"])
    assert market["owner"]["name"].strip()
    (entry,) = market["plugins"]
    assert entry["name"] == manifest["name"]
    assert entry["version"] == manifest["version"]
    assert entry["source"].startswith("./")
    assert (REPO / entry["source"]).resolve() == PLUGIN.resolve()


def test_hooks_cover_the_four_events_with_the_right_scripts() -> None:
    commands = hook_commands()
    assert set(commands) == set(EXPECTED_HOOKS)
    for event, (matcher, script) in EXPECTED_HOOKS.items():
        hook = commands[event]
        assert hook["type"] == "command"
        assert hook["matcher"] == matcher
        argv = shlex.split(hook["command"])
        # /bin/sh finds python3 in an absolute PATH entry only (test_hook_program.py)
        assert argv == ["/bin/sh", "${CLAUDE_PLUGIN_ROOT}/hooks/run-hook.sh", script[:-3]]
        assert (HOOKS / script).is_file()


def test_timeouts_leave_room_for_the_hooks_own_deadlines() -> None:
    from post_tool_use import INDEX_TIMEOUT_SECONDS
    from stop import INGEST_TIMEOUT_SECONDS
    from user_prompt_submit import DEFAULT_TIMEOUT_SECONDS

    commands = hook_commands()
    prompt = commands["UserPromptSubmit"]
    assert DEFAULT_TIMEOUT_SECONDS + 2 <= prompt["timeout"] <= 15
    assert "async" not in prompt  # the context must be there before Claude reads the prompt
    assert commands["PostToolUse"]["timeout"] > INDEX_TIMEOUT_SECONDS
    assert commands["Stop"]["timeout"] > INGEST_TIMEOUT_SECONDS
    from session_start import CHECK_TIMEOUT_SECONDS

    assert commands["SessionStart"]["timeout"] > CHECK_TIMEOUT_SECONDS
    assert commands["PostToolUse"]["async"] is True
    assert commands["Stop"]["async"] is True


def test_skill_has_frontmatter() -> None:
    text = (PLUGIN / "skills" / "search" / "SKILL.md").read_text(encoding="utf-8")
    front = text.split("---")[1]
    assert re.search(r"^name: \S", front, re.M)
    assert re.search(r"^description: \S", front, re.M)


@pytest.mark.parametrize("event", sorted(EXPECTED_HOOKS))
def test_each_command_runs_as_written(event: str, tmp_path: Path) -> None:
    """Run the exact hooks.json command through a shell, as Claude Code does, with `python3`
    being this interpreter: it must start, read stdin and exit 0 silently."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = base_env(
        CLAUDE_PLUGIN_ROOT=str(PLUGIN),
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        TSM_BIN="/nonexistent/tsm",
    )
    payload = claude_input(event, tmp_path, prompt="ok")  # too short: skipped
    done = subprocess.run(
        hook_commands()[event]["command"],
        shell=True,
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""


@pytest.mark.parametrize("script", sorted(p.name for p in HOOKS.glob("*.py")))
def test_hook_code_is_stdlib_only(script: str) -> None:
    allowed = set(sys.stdlib_module_names) | {p.stem for p in HOOKS.glob("*.py")}
    source = (HOOKS / script).read_text(encoding="utf-8")
    imported = re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][\w]*)", source, re.M)
    assert set(imported) - allowed - {"__future__"} == set()
