"""Test harness for the Claude Code plugin: run a hook script as Claude Code does (a fresh
`python3 script.py` with the hook input JSON on stdin) and read what it left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from patience import scaled

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugin"
HOOKS = PLUGIN / "hooks"

# Variables that steer where tsm keeps state or how the hooks behave: each test sets its own.
HOOK_VARIABLES = (
    "TSM_INDEX_ROOT",
    "TSM_STATE_DIR",
    "TSM_DB_PATH",
    "TSM_BIN",
    "CLAUDE_PLUGIN_OPTION_TSM_BIN",
    "TSM_HOOK_TIMEOUT",
    "TSM_INJECT_TOP_K",
    "TSM_INJECT_MIN_SCORE",
    "TSM_INJECT_MIN_RELEVANCE",
    "TSM_INJECT_MIN_COVERAGE",
    "TSM_INJECT_MIN_DROP",
    "TSM_SNIPPET_BUDGET",
)

# The real CLI: on PATH, or beside the interpreter when the venv is not activated.
TSM = shutil.which("tsm") or shutil.which("tsm", path=str(Path(sys.executable).parent))
needs_tsm = pytest.mark.skipif(TSM is None, reason="the tsm CLI is not installed")


@dataclass
class HookRun:
    """One finished hook process."""

    returncode: int
    stdout: bytes
    stderr: bytes

    def output(self) -> dict[str, Any]:
        """Parse stdout as Claude Code does: exactly one JSON object and nothing else."""
        text = self.stdout.decode("utf-8")
        decoder = json.JSONDecoder()
        value, end = decoder.raw_decode(text)
        assert text[end:].strip() == "", f"text after the JSON object: {text[end:]!r}"
        assert isinstance(value, dict)
        return value


def base_env(**overrides: str) -> dict[str, str]:
    """The test process's environment without any hook or location variable, plus overrides."""
    env = {k: v for k, v in os.environ.items() if k not in HOOK_VARIABLES}
    env.update(overrides)
    return env


def trust(root: Path) -> None:
    """Trust `root` as `tsm trust` does, in this test's user config dir (XDG_CONFIG_HOME):
    the hooks act only in trusted index roots (README "Trust model")."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "trusted-roots.txt").open("a", encoding="utf-8") as fh:
        fh.write(f"{os.path.realpath(root)}\n")


def claude_input(event: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    """The common fields Claude Code sends to every hook (hooks reference, "Hook input")."""
    return {
        "session_id": "00893aaf-19fa-41d2-8238-13269b9b3ca0",
        "transcript_path": str(cwd / "no-such-transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def run_hook(
    name: str,
    payload: Mapping[str, Any] | bytes,
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 60,
) -> HookRun:
    """Run plugin/hooks/NAME.py with `payload` (a dict, or raw bytes) on stdin."""
    stdin = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
    done = subprocess.run(
        [sys.executable, str(HOOKS / f"{name}.py")],
        input=stdin,
        capture_output=True,
        env=dict(env),
        cwd=cwd,
        timeout=scaled(timeout),
    )
    return HookRun(done.returncode, done.stdout, done.stderr)


def log_lines(state_dir: Path) -> list[str]:
    """The lines of the hook log under `state_dir`, or none when it was never written."""
    path = state_dir / "logs" / "hooks.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def tsm_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed `tsm` (as the hooks find it) run in `cwd` with the hooks' environment."""
    assert TSM is not None
    return subprocess.run(
        [TSM, *args], cwd=cwd, env=base_env(), capture_output=True, text=True, timeout=scaled(600)
    )


def index_vault(root: Path, notes: Mapping[str, str]) -> Path:
    """Write `notes` (relative path → text) under `root` and index them with the real CLI."""
    for name, text in notes.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    done = tsm_cli("index", "-f", "json", str(root), cwd=root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["indexed"] == len(notes)
    return root


def indexed_copy(source: Path, root: Path) -> Path:
    """A copy of the fixture vault `source` at `root`, indexed with the real CLI."""
    shutil.copytree(source, root)
    done = tsm_cli("index", "-f", "json", str(root), cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def ask_hook(vault: Path, prompt: str) -> HookRun:
    """The prompt hook run on `prompt` as Claude Code sends it, with the installed tsm."""
    assert TSM is not None
    payload = claude_input("UserPromptSubmit", vault, prompt=prompt)
    env = base_env(TSM_BIN=TSM, TSM_HOOK_TIMEOUT="120")
    run = run_hook("user_prompt_submit", payload, env=env, cwd=vault, timeout=300)
    assert run.returncode == 0, run.stderr
    return run
