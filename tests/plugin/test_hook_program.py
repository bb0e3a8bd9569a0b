"""The hooks run only an absolute tsm that no repository controls: a `tsm` a cloned
repository ships is never run, whatever PATH, TSM_BIN or the recorded command say.

Each test runs the real hook scripts as Claude Code does (a fresh python process fed the
hook input JSON on stdin) in a repository cloned inside a trusted notes folder. The
repository holds a `tsm` that appends to a mark file when run. The real tsm is reachable
only through the command `tsm init` records, which the hooks fall back to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_harness import (
    HOOKS,
    PLUGIN,
    TSM,
    base_env,
    claude_input,
    log_lines,
    needs_tsm,
    trust,
)

pytestmark = needs_tsm

BARE_PATH = os.pathsep.join(["/usr/bin", "/bin"])
# The planted program says it is tsm, so only the mark tells it ran.
PLANTED = "#!/bin/sh\necho \"$0 $*\" >> {mark}\necho 'tsm 0.0.1'\n"
HOOK_EVENTS = {
    "session_start": "SessionStart",
    "user_prompt_submit": "UserPromptSubmit",
    "post_tool_use": "PostToolUse",
    "stop": "Stop",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """<tmp>/notes/repo: a clone inside a trusted notes folder, its `tsm` planted where
    JavaScript work puts programs on PATH (its top folder and node_modules/.bin)."""
    notes = tmp_path / "notes"
    clone = notes / "repo"
    (clone / "node_modules" / ".bin").mkdir(parents=True)
    (notes / "tsm.toml").write_text("", encoding="utf-8")
    (clone / "README.md").write_text("# Repo\n\nA cloned repository.\n", encoding="utf-8")
    (clone / "session.jsonl").write_text("{}\n", encoding="utf-8")
    for folder in (clone, clone / "node_modules" / ".bin"):
        plant(folder / "tsm", tmp_path / "mark")
    trust(notes)
    record(TSM)
    return clone


def plant(program: Path, mark: Path) -> None:
    program.write_text(PLANTED.format(mark=mark), encoding="utf-8")
    program.chmod(0o755)


def record(*command: str) -> None:
    """The command file `tsm init` writes (tsm's launcher.py)."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "tsm"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tsm-command.json").write_text(json.dumps({"command": list(command)}))


def run(name: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    """Run hooks/NAME.py in `cwd` as Claude Code does, with the input it sends there."""
    fields: dict[str, Any] = {
        "session_start": {"source": "startup"},
        "user_prompt_submit": {"prompt": "how is the repository built?"},
        "post_tool_use": {"tool_name": "Write", "tool_input": {"file_path": "README.md"}},
        "stop": {"transcript_path": str(cwd / "session.jsonl"), "stop_hook_active": False},
    }[name]
    payload = claude_input(HOOK_EVENTS[name], cwd, **fields)
    done = subprocess.run(
        [sys.executable, str(HOOKS / f"{name}.py")],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=base_env(TSM_HOOK_TIMEOUT="120", TSM_EMBEDDER="none", **env),
        cwd=cwd,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


def assert_not_run(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    assert not mark.exists(), f"the repository's tsm ran: {mark.read_text()}"


@pytest.mark.parametrize("hook", list(HOOK_EVENTS))
@pytest.mark.parametrize(
    "entry",
    [
        "",  # PATH=/usr/bin:/bin: (a trailing colon): the current folder
        ".",
        "node_modules/.bin",
        "{repo}/node_modules/.bin",  # absolute, as direnv's PATH_add writes it
    ],
)
def test_the_repositorys_tsm_on_path_is_never_run(
    repo: Path, tmp_path: Path, hook: str, entry: str
) -> None:
    path = os.pathsep.join([entry.format(repo=repo), BARE_PATH])
    done = run(hook, repo, PATH=path)
    assert_not_run(tmp_path)
    if hook == "session_start":  # the recorded tsm answered: nothing to tell the user
        assert done.stdout == b"", done.stdout


def test_a_tsm_inside_another_trusted_root_is_not_run(repo: Path, tmp_path: Path) -> None:
    """An index root is a folder of cloned repositories as much as the one the session is in."""
    other = tmp_path / "other-notes"
    (other / "bin").mkdir(parents=True)
    plant(other / "bin" / "tsm", tmp_path / "mark")
    trust(other)
    done = run("session_start", repo, PATH=os.pathsep.join([str(other / "bin"), BARE_PATH]))
    assert_not_run(tmp_path)
    assert done.stdout == b""


def test_a_tsm_on_path_outside_every_root_is_still_run(repo: Path, tmp_path: Path) -> None:
    """The rule passes over repository folders only: an ordinary PATH entry still wins over
    the recorded command."""
    own = tmp_path / "bin"
    own.mkdir()
    plant(own / "tsm", tmp_path / "own-mark")
    run("session_start", repo, PATH=os.pathsep.join([".", str(own), BARE_PATH]))
    assert_not_run(tmp_path)
    assert (tmp_path / "own-mark").read_text().split() == [str(own / "tsm"), "--version"]


@pytest.mark.parametrize("variable", ["TSM_BIN", "CLAUDE_PLUGIN_OPTION_TSM_BIN"])
@pytest.mark.parametrize("chosen", ["tsm", "./tsm", "node_modules/.bin/tsm"])
def test_a_relative_explicit_choice_is_named_not_run(
    repo: Path, tmp_path: Path, variable: str, chosen: str
) -> None:
    done = run("session_start", repo, PATH=os.pathsep.join([".", BARE_PATH]), **{variable: chosen})
    assert_not_run(tmp_path)
    message = json.loads(done.stdout)["systemMessage"]
    assert f"{variable} is {chosen!r}, not an absolute path" in message


def test_a_relative_recorded_command_is_not_run(repo: Path, tmp_path: Path) -> None:
    record("tsm")
    done = run("session_start", repo, PATH=os.pathsep.join(["", BARE_PATH]))
    assert_not_run(tmp_path)
    if done.stdout:  # with no python3 -m tsm either, the session is told why
        assert "is not an absolute path (tsm)" in json.loads(done.stdout)["systemMessage"]


def test_a_relative_index_root_is_the_one_the_hook_vetted(repo: Path, tmp_path: Path) -> None:
    """tsm runs in the index root, not the session's folder: a relative TSM_INDEX_ROOT
    (`..` from the repository: the trusted notes folder) must name the same root there."""
    done = run("post_tool_use", repo, PATH=BARE_PATH, TSM_INDEX_ROOT="..")
    assert done.stdout == b"" and log_lines(repo.parent / ".tsm") == []
    assert "repo/README.md" in listed_in_notes(repo)
    assert not (tmp_path / ".tsm").exists()  # `..` from the notes folder: never indexed


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no /usr/bin/python3")
@pytest.mark.parametrize(
    ("entry", "cwd"),
    [
        ("", "."),
        (".", "."),
        ("node_modules/.bin", "."),
        ("{repo}/node_modules/.bin", "."),  # absolute: direnv's PATH_add, an activated .venv
        ("{repo}/node_modules/.bin", "node_modules"),  # a subfolder; CLAUDE_PROJECT_DIR names it
    ],
)
def test_the_repositorys_python3_does_not_run_the_hooks(
    repo: Path, tmp_path: Path, entry: str, cwd: str
) -> None:
    """hooks.json's own command, run through a shell in the session's folder as Claude Code
    runs it: the interpreter is looked up on PATH too."""
    for folder in (repo, repo / "node_modules" / ".bin"):
        plant(folder / "python3", tmp_path / "mark")
    done = run_hook_command(
        repo / cwd,
        PATH=os.pathsep.join([entry.format(repo=repo), BARE_PATH]),
        CLAUDE_PROJECT_DIR=str(repo),
    )
    assert done.returncode == 0, done.stderr
    assert_not_run(tmp_path)
    assert done.stdout == b"", done.stdout  # the hook ran, under /usr/bin/python3, and tsm answered


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no /usr/bin/python3")
def test_a_python3_in_the_home_folder_runs_a_session_there(tmp_path: Path) -> None:
    """The home folder is not taken for a repository: a session in it still runs the hooks
    with the user's own python3 (~/.local/bin, a pyenv shim) rather than none at all."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    wrapper = home / "bin" / "python3"
    wrapper.write_text(f'#!/bin/sh\ntouch {tmp_path / "ran"}\nexec /usr/bin/python3 "$@"\n')
    wrapper.chmod(0o755)
    done = run_hook_command(
        home, PATH=os.pathsep.join([str(home / "bin"), BARE_PATH]), HOME=str(home)
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").exists(), done.stderr


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no /usr/bin/python3")
def test_the_hook_runs_in_the_session_folder_it_was_started_in(repo: Path, tmp_path: Path) -> None:
    """The launcher enters the project, home and PATH folders to learn their physical paths;
    the hook's python3 still starts where Claude Code started the hook (reached here through
    a symbolic link), and a CDPATH neither moves it nor prints anything."""
    home, elsewhere, tools = tmp_path / "home", tmp_path / "cdpath", tmp_path / "tools"
    (elsewhere / "notes").mkdir(parents=True)
    home.mkdir()
    tools.mkdir()
    wrapper = tools / "python3"
    wrapper.write_text(f'#!/bin/sh\npwd -P > {tmp_path / "ran-in"}\nexec /usr/bin/python3 "$@"\n')
    wrapper.chmod(0o755)
    link = tmp_path / "linked-repo"
    link.symlink_to(repo)
    done = run_hook_command(
        link,
        "PostToolUse",
        PATH=os.pathsep.join([str(tools), BARE_PATH]),
        HOME=str(home),
        CLAUDE_PROJECT_DIR="notes",  # relative: CDPATH would take it to <tmp>/cdpath/notes
        CDPATH=str(elsewhere),
    )
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert (tmp_path / "ran-in").read_text().strip() == str(repo.resolve())
    assert "repo/README.md" in listed_in_notes(repo)


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no /usr/bin/python3")
@pytest.mark.parametrize("event", ["SessionStart", "PostToolUse"])
def test_a_pythonpath_into_the_repository_runs_none_of_its_code(
    repo: Path, tmp_path: Path, event: str
) -> None:
    """direnv's `export PYTHONPATH=$PWD/src` points Python at the repository: neither the
    hook nor the tsm it runs imports from there. Every Python that finds a sitecustomize.py
    on its path imports it at start-up, so the planted one marks any that did."""
    src = repo / "src"
    src.mkdir()
    for module in ("sitecustomize.py", "json.py"):
        (src / module).write_text(f"open({str(tmp_path / 'mark')!r}, 'a').write('{module}')\n")
    done = run_hook_command(
        repo,
        event,
        PATH=BARE_PATH,
        PYTHONPATH=str(src),
        CLAUDE_PROJECT_DIR=str(repo),
        TSM_HOOK_TIMEOUT="120",
        TSM_EMBEDDER="none",
    )
    assert done.returncode == 0, done.stderr
    assert_not_run(tmp_path)
    assert done.stdout == b"" and log_lines(repo.parent / ".tsm") == []  # tsm answered
    if event == "PostToolUse":  # and indexed the note the tool wrote
        assert "repo/README.md" in listed_in_notes(repo)


def listed_in_notes(repo: Path) -> str:
    """`tsm list` of the trusted notes folder the repository is cloned in (its JSON)."""
    listed = subprocess.run(
        [str(TSM), "list", "-f", "json"],
        cwd=repo.parent,
        env=base_env(TSM_EMBEDDER="none"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


def run_hook_command(
    cwd: Path, event: str = "SessionStart", **env: str
) -> subprocess.CompletedProcess[bytes]:
    """hooks.json's command for `event` through a shell in `cwd`, as Claude Code runs it."""
    hooks = json.loads((HOOKS / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    command = hooks[event][0]["hooks"][0]["command"]
    fields = {
        "SessionStart": {"source": "startup"},
        "PostToolUse": {"tool_name": "Write", "tool_input": {"file_path": "README.md"}},
    }
    return subprocess.run(
        command,
        shell=True,
        input=json.dumps(claude_input(event, cwd, **fields[event])).encode(),
        capture_output=True,
        env=base_env(CLAUDE_PLUGIN_ROOT=str(PLUGIN), **env),
        cwd=cwd,
        timeout=300,
    )
