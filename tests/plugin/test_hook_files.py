"""What the hooks write: the hook log is created 0600 in a 0700
state dir, never through a symlink, FIFO or hard link a repository planted, every logged
value stays on its line, and an edited file whose name looks like an option is indexed.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plugin_harness import TSM, base_env, claude_input, log_lines, needs_tsm, run_hook

FALSE = shutil.which("false") or "/bin/false"
BASHRC = "# the user's own .bashrc\nexport EDITOR=vi\n"
root_only = pytest.mark.skipif(os.getuid() != 0, reason="needs root to chown to another uid")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A stand-in $HOME with a .bashrc, and a repository `repo` holding one note."""
    home = tmp_path / "home"
    (home / "repo").mkdir(parents=True)
    (home / ".bashrc").write_text(BASHRC)
    (home / "repo" / "note.md").write_text("# Note\n\nLoRa radio settings.\n")
    return home


def prompt(cwd: Path) -> dict[str, object]:
    return claude_input("UserPromptSubmit", cwd, prompt="what are the LoRa radio settings?")


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    return base_env(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        TSM_AUTOSTART="0",
        TSM_EMBEDDER="none",
        **extra,
    )


def plant_hostile_repo(repo: Path) -> None:
    """A hostile repository: a config value that is shell code, and the hook
    log linked to ~/.bashrc."""
    (repo / "tsm.toml").write_text('[search]\ntop_k = "\\"\'; touch ~/pwned; #"\n')
    (repo / ".tsm" / "logs").mkdir(parents=True)
    (repo / ".tsm" / "logs" / "hooks.log").symlink_to("../../../.bashrc")


def assert_home_intact(home: Path) -> None:
    subprocess.run(
        ["bash", "-i", "-c", "true"],
        env={"HOME": str(home), "PATH": os.defpath},
        cwd=home,
        capture_output=True,
        timeout=30,
    )
    assert not (home / "pwned").exists()
    assert (home / ".bashrc").read_text() == BASHRC


@needs_tsm
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bashrc_attack_of_the_issue_appends_nothing(home: Path) -> None:
    """Exactly as reported: only the repository's own files, cwd = ~/repo."""
    repo = home / "repo"
    plant_hostile_repo(repo)
    run_hook("user_prompt_submit", prompt(repo), env=hook_env(home, TSM_BIN=str(TSM)), cwd=repo)
    assert_home_intact(home)


@needs_tsm
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bashrc_attack_in_a_trusted_root_appends_nothing(home: Path) -> None:
    """The user trusts the folder (their own TSM_INDEX_ROOT), so the hook runs tsm, tsm fails
    on the config value, and the hook logs it: the line goes to stderr, not through the link."""
    repo = home / "repo"
    plant_hostile_repo(repo)
    run = run_hook(
        "user_prompt_submit",
        prompt(repo),
        env=hook_env(home, TSM_BIN=str(TSM), TSM_INDEX_ROOT=str(repo)),
        cwd=repo,
    )
    assert run.returncode == 0 and run.stdout == b""
    assert b"top_k" in run.stderr  # the failure was logged, to the one safe place left
    assert_home_intact(home)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    path.mkdir()
    (path / "a.md").write_text("# A\n\nLoRa notes.\n")
    return path


def failing_hook(vault: Path, **extra: str) -> None:
    run = run_hook(
        "user_prompt_submit",
        prompt(vault),
        env=base_env(TSM_INDEX_ROOT=str(vault), TSM_BIN=FALSE, **extra),
        cwd=vault,
    )
    assert run.returncode == 0 and run.stdout == b""


def test_the_hook_log_is_private(vault: Path) -> None:
    failing_hook(vault)
    state = vault / ".tsm"
    assert len(log_lines(state)) == 1
    assert (mode(state), mode(state / "logs"), mode(state / "logs" / "hooks.log")) == (
        0o700,
        0o700,
        0o600,
    )


def test_an_open_state_dir_of_an_older_tsm_is_tightened(vault: Path) -> None:
    logs = vault / ".tsm" / "logs"
    logs.mkdir(parents=True)
    (logs / "hooks.log").write_text("an old line\n")
    for path, old in ((vault / ".tsm", 0o755), (logs, 0o755), (logs / "hooks.log", 0o644)):
        path.chmod(old)
    failing_hook(vault)
    assert (mode(vault / ".tsm"), mode(logs), mode(logs / "hooks.log")) == (0o700, 0o700, 0o600)
    assert len(log_lines(vault / ".tsm")) == 2


@pytest.mark.parametrize(
    "planted", ["log link", "dangling log link", "logs dir link", "state dir link", "hard link"]
)
def test_a_planted_link_is_never_written_through(vault: Path, tmp_path: Path, planted: str) -> None:
    victim_dir = tmp_path / "elsewhere"
    victim_dir.mkdir()
    victim = victim_dir / "victim.txt"
    victim.write_text("untouched\n")
    state = vault / ".tsm"
    logs = state / "logs"
    if planted == "state dir link":
        state.symlink_to(victim_dir)
    elif planted == "logs dir link":
        state.mkdir()
        logs.symlink_to(victim_dir)
    else:
        logs.mkdir(parents=True)
        if planted == "log link":
            (logs / "hooks.log").symlink_to(victim)
        elif planted == "dangling log link":
            (logs / "hooks.log").symlink_to(victim_dir / "new.txt")
        else:
            os.link(victim, logs / "hooks.log")
    failing_hook(vault)
    assert victim.read_text() == "untouched\n"
    assert sorted(p.name for p in victim_dir.iterdir()) == ["victim.txt"]


def test_a_fifo_as_the_log_does_not_hang_the_hook(vault: Path) -> None:
    logs = vault / ".tsm" / "logs"
    logs.mkdir(parents=True)
    os.mkfifo(logs / "hooks.log")
    failing_hook(vault)  # run_hook's timeout fails the test if the hook blocks


@root_only
def test_a_state_dir_of_another_user_is_not_written(vault: Path) -> None:
    logs = vault / ".tsm" / "logs"
    logs.mkdir(parents=True)
    os.chown(vault / ".tsm", 65534, 65534)
    failing_hook(vault)
    assert not (logs / "hooks.log").exists()


def test_a_shared_sticky_state_dir_is_left_as_it_is(vault: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    failing_hook(vault, TSM_STATE_DIR=str(shared))
    assert mode(shared) == 0o1777 and not (shared / "logs").exists()


def test_control_characters_in_a_logged_value_stay_on_one_line(vault: Path, tmp_path: Path) -> None:
    """A stand-in tsm whose error message (a filename, a config value) carries a newline,
    a carriage return, an ANSI escape and a Unicode line separator."""
    message = "bad value\nFORGED 2099-01-01 stop: \x1b[31mred\r\u2028touch ~/pwned"
    fake = tmp_path / "fake-tsm"
    fake.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(f"""\
        import json, sys
        sys.stderr.write(json.dumps({{"error": {message!r}, "kind": "user_error"}}) + "\\n")
        sys.exit(1)
        """)
    )
    fake.chmod(0o755)
    run = run_hook(
        "user_prompt_submit",
        prompt(vault),
        env=base_env(TSM_INDEX_ROOT=str(vault), TSM_BIN=str(fake)),
        cwd=vault,
    )
    assert run.returncode == 0
    raw = (vault / ".tsm" / "logs" / "hooks.log").read_bytes()
    assert raw.count(b"\n") == 1 and raw.endswith(b"\n")
    assert b"\x1b" not in raw and b"\r" not in raw and "\u2028".encode() not in raw
    assert "bad value\\nFORGED" in raw.decode() and "\\x1b[31m" in raw.decode()


@needs_tsm
@pytest.mark.parametrize("name", ["-h.md", "--apply.md", "-f.md"])
def test_an_edited_file_named_like_an_option_is_indexed(vault: Path, name: str) -> None:
    note = vault / name
    note.write_text("# Dashing\n\nA note about xylophone tuning.\n")
    env = base_env(
        TSM_INDEX_ROOT=str(vault), TSM_BIN=str(TSM), TSM_EMBEDDER="none", TSM_AUTOSTART="0"
    )
    payload = claude_input(
        "PostToolUse",
        vault,
        tool_name="Write",
        tool_input={"file_path": str(note), "content": ""},
        tool_response={"filePath": str(note), "success": True},
    )
    run = run_hook("post_tool_use", payload, env=env, cwd=vault)
    assert run.returncode == 0 and run.stdout == b""
    assert log_lines(vault / ".tsm") == []
    listed = subprocess.run(
        [str(TSM), "list", "-f", "json"],
        cwd=vault,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert name in {doc["path"] for doc in json.loads(listed.stdout)}
