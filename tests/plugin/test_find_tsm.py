"""The hooks find tsm when it is not on PATH, and when they cannot, the
session says so once (SessionStart's systemMessage) instead of every prompt failing quietly.

Every test runs the real hook scripts with Claude Code's JSON on stdin and a PATH that has
no `tsm`. The scripts run from a copy of plugin/hooks (so the "checkout's .venv" fallback
only applies where a test builds one) and, unless a test wants the `python3 -m tsm`
fallback, under a system python3 without tsm installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import HOOKS, PLUGIN, TSM, base_env, claude_input, log_lines, needs_tsm, trust

pytestmark = needs_tsm

BARE_PATH = os.pathsep.join(["/usr/bin", "/bin"])
NOTE = "# Installing Git\n\nBuild Git from source with make configure and make install.\n"


def _python_without_tsm() -> str | None:
    for candidate in ("/usr/bin/python3", "/bin/python3"):
        if os.path.exists(candidate):
            done = subprocess.run(
                [candidate, "-c", "import importlib.util as u; print(u.find_spec('tsm'))"],
                capture_output=True,
                text=True,
                env={"PATH": BARE_PATH},
            )
            if done.returncode == 0 and done.stdout.strip() == "None":
                return candidate
    return None


SYSTEM_PYTHON = _python_without_tsm()
needs_system_python = pytest.mark.skipif(
    SYSTEM_PYTHON is None, reason="no python3 without tsm to run the hooks with"
)


@pytest.fixture
def plugin_copy(tmp_path: Path) -> Path:
    """<tmp>/checkout/plugin/hooks: the hook scripts, away from this checkout's .venv."""
    hooks = tmp_path / "checkout" / "plugin" / "hooks"
    shutil.copytree(HOOKS, hooks, ignore=shutil.ignore_patterns("__pycache__"))
    return hooks


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A trusted index root with one note indexed by the real CLI."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "git.md").write_text(NOTE, encoding="utf-8")
    assert TSM is not None
    done = subprocess.run(
        [TSM, "index", "-f", "json", str(folder)],
        cwd=folder,
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    trust(folder)
    return folder


def hook(
    hooks: Path,
    name: str,
    cwd: Path,
    *,
    python: str | None = None,
    **env: str,
) -> tuple[dict[str, Any] | None, subprocess.CompletedProcess[bytes]]:
    """Run hooks/NAME.py as Claude Code would; its JSON output (None when silent)."""
    event = {"session_start": "SessionStart", "user_prompt_submit": "UserPromptSubmit"}[name]
    fields: dict[str, Any] = {"source": "startup"} if name == "session_start" else {}
    if name == "user_prompt_submit":
        fields["prompt"] = "how do I build git from source with make install?"
    payload = claude_input(event, cwd, **fields)
    done = subprocess.run(
        [python or SYSTEM_PYTHON or sys.executable, str(hooks / f"{name}.py")],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=base_env(PATH=BARE_PATH, TSM_HOOK_TIMEOUT="120", **env),
        cwd=cwd,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    return (json.loads(text) if text.strip() else None), done


def assert_tsm_not_on_path() -> None:
    assert shutil.which("tsm", path=BARE_PATH) is None, "tsm is installed system-wide"


@needs_system_python
def test_nothing_found_tells_the_user_once_at_session_start(plugin_copy: Path, root: Path) -> None:
    # The index was built by a tsm this user config has no record of (the fixture's
    # `tsm index` recorded itself: remove that, as for an index built by another account).
    (Path(os.environ["XDG_CONFIG_HOME"]) / "tsm" / "tsm-command.json").unlink(missing_ok=True)
    assert_tsm_not_on_path()
    output, _ = hook(plugin_copy, "session_start", root)
    assert output is not None and set(output) == {"systemMessage"}
    message = output["systemMessage"]
    assert message.startswith("tsm plugin: cannot find tsm")
    assert "tsm_bin" in message and "TSM_BIN" in message
    assert any("session_start: cannot find tsm" in line for line in log_lines(root / ".tsm"))
    # The prompt goes on unchanged: the prompt hook prints nothing (its failure is logged).
    prompt_output, _ = hook(plugin_copy, "user_prompt_submit", root)
    assert prompt_output is None


@needs_system_python
def test_an_untrusted_folder_gets_no_message(plugin_copy: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    output, done = hook(plugin_copy, "session_start", elsewhere)
    assert output is None and done.stdout == b""
    assert not (elsewhere / ".tsm").exists()


@needs_system_python
def test_the_tsm_that_ran_index_is_remembered(plugin_copy: Path, root: Path) -> None:
    """`./scripts/demo` only indexes (with .venv/bin/tsm, off PATH): that records the
    command too, for the hooks and for the search skill (SKILL.md)."""
    recorded = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm" / "tsm-command.json"
    assert json.loads(recorded.read_text())["command"] == [TSM]
    output, _ = hook(plugin_copy, "session_start", root)
    assert output is None
    injected, _ = hook(plugin_copy, "user_prompt_submit", root)
    assert injected is not None and "git.md" in json.dumps(injected)


@needs_system_python
def test_the_tsm_that_ran_trust_is_remembered(plugin_copy: Path, root: Path) -> None:
    """`tsm trust` (as `tsm init`) records its own command; the hooks then run it."""
    assert TSM is not None
    done = subprocess.run(
        [TSM, "trust", "-f", "json"], cwd=root, env=base_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    recorded = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm" / "tsm-command.json"
    assert json.loads(recorded.read_text())["command"] == [TSM]
    assert set(json.loads(done.stdout)) == {"root", "trusted", "added", "honoured", "trust_file"}

    output, _ = hook(plugin_copy, "session_start", root)
    assert output is None
    injected, _ = hook(plugin_copy, "user_prompt_submit", root)
    assert injected is not None
    context = injected["hookSpecificOutput"]["additionalContext"]
    assert "git.md" in context


@needs_system_python
def test_a_recorded_tsm_that_is_gone_is_named(plugin_copy: Path, root: Path) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm"
    config.mkdir(parents=True, exist_ok=True)
    gone = root.parent / "deleted-venv" / "bin" / "tsm"
    (config / "tsm-command.json").write_text(json.dumps({"command": [str(gone)]}))
    output, _ = hook(plugin_copy, "session_start", root)
    assert output is not None
    assert f"is gone ({gone})" in output["systemMessage"]


@needs_system_python
def test_the_plugin_option_is_used(plugin_copy: Path, root: Path) -> None:
    """`claude plugin install … --config tsm_bin=PATH` reaches hooks as this variable."""
    assert TSM is not None
    output, _ = hook(plugin_copy, "session_start", root, CLAUDE_PLUGIN_OPTION_TSM_BIN=TSM)
    assert output is None
    injected, _ = hook(plugin_copy, "user_prompt_submit", root, CLAUDE_PLUGIN_OPTION_TSM_BIN=TSM)
    assert injected is not None and "git.md" in json.dumps(injected)


@needs_system_python
def test_a_wrong_plugin_option_is_named_not_replaced(plugin_copy: Path, root: Path) -> None:
    """An explicit choice that fails is reported, even though another tsm could be found."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm"
    config.mkdir(parents=True, exist_ok=True)
    (config / "tsm-command.json").write_text(json.dumps({"command": [TSM]}))
    wrong = str(root / "no-such-tsm")
    output, _ = hook(plugin_copy, "session_start", root, CLAUDE_PLUGIN_OPTION_TSM_BIN=wrong)
    assert output is not None
    assert wrong in output["systemMessage"]


@needs_system_python
def test_the_checkout_venv_is_found(plugin_copy: Path, root: Path) -> None:
    """Installed from a checkout, the plugin runs in place beside `./scripts/demo`'s venv."""
    assert TSM is not None
    venv_bin = plugin_copy.parents[1] / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "tsm").symlink_to(TSM)
    output, _ = hook(plugin_copy, "session_start", root)
    assert output is None
    injected, _ = hook(plugin_copy, "user_prompt_submit", root)
    assert injected is not None and "git.md" in json.dumps(injected)


CLAUDE = Path(
    os.environ.get("TSM_CLAUDE_CLI_DIR") or Path.home() / ".cache" / "tsm-claude-cli",
    "node_modules",
    ".bin",
    "claude",
)  # where scripts/validate-plugin.sh installs the real Claude Code CLI


@needs_system_python
@pytest.mark.skipif(not CLAUDE.exists(), reason="the Claude Code CLI is not installed")
def test_installed_by_claude_from_a_checkout_finds_its_venv(tmp_path: Path, root: Path) -> None:
    """`claude plugin install` copies the plugin into its cache, away from the checkout: the
    hooks still find the checkout's `.venv/bin/tsm` through the directory marketplace."""
    assert TSM is not None
    (Path(os.environ["XDG_CONFIG_HOME"]) / "tsm" / "tsm-command.json").unlink(missing_ok=True)
    checkout = tmp_path / "checkout"
    shutil.copytree(PLUGIN, checkout / "plugin", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PLUGIN.parent / ".claude-plugin", checkout / ".claude-plugin")
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "tsm").symlink_to(TSM)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in base_env(HOME=str(home)).items() if k != "CLAUDE_CONFIG_DIR"}
    for args in (
        ["plugin", "marketplace", "add", str(checkout)],
        ["plugin", "install", "tsm@the-space-memory"],
    ):
        done = subprocess.run(
            [str(CLAUDE), *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
    install_path = Path(installed["plugins"]["tsm@the-space-memory"][0]["installPath"])
    assert checkout not in install_path.parents  # a copy: the checkout's .venv is not beside it
    assert_tsm_not_on_path()
    output, _ = hook(install_path / "hooks", "session_start", root)
    assert output is None, output
    injected, _ = hook(install_path / "hooks", "user_prompt_submit", root)
    assert injected is not None and "git.md" in json.dumps(injected)


def test_python_m_tsm_of_the_hooks_interpreter(plugin_copy: Path, root: Path) -> None:
    """The python3 that runs the hooks has tsm installed: `python3 -m tsm` is used."""
    output, _ = hook(plugin_copy, "session_start", root, python=sys.executable)
    assert output is None
    injected, _ = hook(plugin_copy, "user_prompt_submit", root, python=sys.executable)
    assert injected is not None and "git.md" in json.dumps(injected)


@needs_system_python
def test_a_program_that_is_not_tsm_is_named(plugin_copy: Path, root: Path) -> None:
    impostor = root.parent / "impostor"
    impostor.write_text("#!/bin/sh\necho 'something else 1.0'\n")
    impostor.chmod(0o755)
    output, _ = hook(plugin_copy, "session_start", root, TSM_BIN=str(impostor))
    assert output is not None
    assert "is not tsm" in output["systemMessage"]


@needs_system_python
def test_controls_in_the_message_are_escaped(plugin_copy: Path, root: Path) -> None:
    output, done = hook(plugin_copy, "session_start", root, TSM_BIN="/nowhere/tsm\x1b[31m")
    assert output is not None
    assert "\x1b" not in output["systemMessage"] and "\\x1b[31m" in output["systemMessage"]
    assert b"\x1b" not in done.stdout


def test_the_search_skill_runs_tsm_off_path_as_it_says(root: Path) -> None:
    """SKILL.md has Claude run `tsm …` in the Bash tool, whose PATH may hold no tsm (right
    after ./scripts/demo): the file it names then holds a command that searches."""
    assert TSM is not None
    skill = (PLUGIN / "skills" / "search" / "SKILL.md").read_text(encoding="utf-8")
    named = re.search(r"`~/\.config/tsm/([\w.-]+)`", skill)
    assert named is not None, "SKILL.md does not say where the tsm command is recorded"
    done = subprocess.run(
        [TSM, "trust", "-f", "json"], cwd=root, env=base_env(), capture_output=True, text=True
    )
    assert done.returncode == 0
    recorded = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm" / named.group(1)
    command = json.loads(recorded.read_text(encoding="utf-8"))["command"]
    assert_tsm_not_on_path()
    found = subprocess.run(
        [*command, "search", "build git from source", "--format", "json"],
        cwd=root,
        env=base_env(PATH=BARE_PATH),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    assert [r["source"]["path"] for r in json.loads(found.stdout)["results"]][:1] == ["git.md"]
