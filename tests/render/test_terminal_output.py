"""Human output for a terminal, through the real CLI in subprocesses:
colour only on a terminal or when forced, never with NO_COLOR; matched words highlighted;
paths as OSC 8 links with the line the hit starts on; CJK-aware column widths and `tsm list`
fitted to COLUMNS; `status` in words; `--json` the same as `-f json`; `--open` in $EDITOR;
completion scripts that the shells accept.

pytest gives no terminal, so colour is forced with FORCE_COLOR, or a real pseudo-terminal
(pty.openpty) is the CLI's stdout.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import wcwidth

ESC = "\x1b"
SGR = re.compile(r"\x1b\[[0-9;]*m")
OSC8 = re.compile(r"\x1b\]8;;([^\x1b]*)\x1b\\")


def plain(text: str) -> str:
    return OSC8.sub("", SGR.sub("", text))


def run_on_pty(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """The CLI's output with a pseudo-terminal as its stdout (what a user's shell gives)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tsm", *args],
            stdout=follower,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **env},
            cwd=cwd,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=300) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(leader)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


# -- colour decisions -----------------------------------------------------------------------
def test_no_escapes_when_piped(indexed_read_only: Path, tsm: Any) -> None:
    for command in (("search", "install git"), ("list",), ("tags",), ("status",)):
        result = tsm(*command, "-f", "human", env={"TERM": "xterm-256color"})
        assert result.code == 0, result.err
        assert ESC not in result.out, command


def test_a_terminal_gets_colour_and_no_color_turns_it_off(
    indexed_read_only: Path, tmp_path: Path
) -> None:
    env = {"TERM": "xterm-256color", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    coloured = run_on_pty(["search", "install git", "-k", "3"], env, tmp_path)
    assert SGR.search(coloured) and OSC8.search(coloured)
    for off in ({"NO_COLOR": "1"}, {"TERM": "dumb"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}):
        out = run_on_pty(["search", "install git", "-k", "3"], {**env, **off}, tmp_path)
        assert ESC not in out, off
        assert plain(coloured) == out  # the same words, only undressed


def test_forced_colour_highlights_matches_and_links_paths_at_their_line(
    indexed_read_only: Path, tsm: Any
) -> None:
    result = tsm("search", "install git", "-f", "human", env={"FORCE_COLOR": "1"})
    assert result.code == 0, result.err
    out = result.out
    assert "\x1b[1;33mgit\x1b[0m" in out or "\x1b[1;33mGit\x1b[0m" in out  # highlighted
    links = OSC8.findall(out)
    targets = [u for u in links if u]
    assert targets, out
    git_link = next(u for u in targets if u.split("#")[0].endswith("/notes/git-install.md"))
    path, line = git_link.removeprefix("file://").split("#")
    host, _, absolute = path.partition("/")
    absolute = "/" + absolute
    assert Path(absolute) == indexed_read_only / "notes" / "git-install.md"
    # The visible text says path:LINE, and that line of the file holds the snippet's start.
    assert f"notes/git-install.md:{line}" in plain(out)
    lines = Path(absolute).read_text(encoding="utf-8").splitlines()
    block = plain(out).split(f"notes/git-install.md:{line}", 1)[1].splitlines()[1].strip()
    first_words = " ".join(block.strip("…").split()[:3])
    assert first_words in " ".join(lines[int(line) - 1].split()), (line, first_words)


def test_japanese_query_is_highlighted(indexed_read_only: Path, tsm: Any) -> None:
    result = tsm("search", "狩猟免許", "-k", "1", "-f", "human", env={"FORCE_COLOR": "1"})
    assert result.code == 0, result.err
    assert "\x1b[1;33m狩猟免許\x1b[0m" in result.out


def test_hostile_text_stays_escaped_in_colour(vault: Path, tsm: Any) -> None:
    note = vault / "notes" / "evil\x1b]0;t\x07.md"
    note.write_text("# Zebra \x1b[31mred\n\nzebrafish \x1b]52;c;eA==\x07 here\n", "utf-8")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    out = tsm("search", "zebrafish", "--fts-only", "-f", "human", env={"FORCE_COLOR": "1"}).out
    ours = OSC8.sub("", SGR.sub("", out))
    assert ESC not in ours and "\\x1b]52;c;" in ours


# -- widths ---------------------------------------------------------------------------------
def test_list_fits_the_terminal_with_japanese_titles(indexed_read_only: Path, tsm: Any) -> None:
    wide = tsm("list", "-f", "human", env={"COLUMNS": "300"})
    assert wide.code == 0, wide.err
    rows = wide.out.splitlines()
    japanese = next(r for r in rows if "モジュール比較" in r)
    # CJK-aware alignment: every row's `tags` column starts at the same display column.
    head = rows[0]
    tags_at = wcwidth.width(head[: head.index("tags")])
    for row in rows[1:]:
        cells = re.split(r"\s{2,}", row.strip())
        if len(cells) == 6:  # a row with tags
            start = row.rindex(cells[-1])
            assert wcwidth.width(row[:start]) == tags_at, row
    assert japanese
    for columns in (60, 80):
        narrow = tsm("list", "-f", "human", env={"COLUMNS": str(columns)})
        assert narrow.code == 0, narrow.err
        widths = [wcwidth.width(line) for line in narrow.out.splitlines()]
        assert max(widths) <= columns, (columns, narrow.out)
        assert "…" in narrow.out  # something had to be cut
        assert any("LoRa" in line for line in narrow.out.splitlines())
    # In colour the paths are links to the notes, and the lines still fit.
    coloured = tsm("list", "-f", "human", env={"COLUMNS": "70", "FORCE_COLOR": "1"}).out
    targets = {"/" + u.removeprefix("file://").partition("/")[2] for u in OSC8.findall(coloured)}
    assert str(indexed_read_only / "research" / "lora-modules.md") in targets, coloured
    assert max(wcwidth.width(line) for line in coloured.splitlines()) <= 70


def test_info_gives_a_note_s_size_with_its_unit(indexed_read_only: Path, tsm: Any) -> None:
    size = (indexed_read_only / "notes" / "git-install.md").stat().st_size
    out = tsm("info", "notes/git-install.md", "-f", "human").out
    shown = re.search(r"^size: +(.*)$", out, re.M)
    assert shown is not None, out
    expected = f"{size} bytes" if size < 1000 else f"{size / 1000:.1f} kB"
    assert shown.group(1) == expected, out
    assert tsm("info", "notes/git-install.md", "-f", "json").json()["size"] == size


def test_status_reads_as_words(indexed_read_only: Path, tsm: Any) -> None:
    out = tsm("status", "-f", "human").out
    assert re.search(r"^db size: +\d+\.\d\d MB$", out, re.M), out
    assert re.search(r"^trusted: +(yes|no)$", out, re.M), out
    assert re.search(r"^vectors stale: +(yes|no)$", out, re.M), out
    assert "True" not in out and "False" not in out and "_" not in out.split("db path")[0]
    when = re.search(r"^embed rate at: +(.*)$", out, re.M)
    assert when is None or re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|-", when.group(1))


# -- JSON stays the contract ------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [("search", "install git"), ("list",), ("tags",), ("info", "notes/git-install.md")],
    ids=lambda c: c[0],
)
def test_json_flag_is_format_json_and_colour_never_touches_json(
    indexed_read_only: Path, tsm: Any, command: tuple[str, ...]
) -> None:
    reference = tsm(*command, "-f", "json")
    assert reference.code == 0, reference.err
    alias = tsm(*command, "--json", env={"FORCE_COLOR": "1", "COLUMNS": "40"})
    assert alias.code == 0, alias.err

    def stable(text: str) -> Any:
        data = json.loads(text)
        if isinstance(data, dict):
            data.pop("took_ms", None)
        return data

    assert stable(alias.out) == stable(reference.out)
    assert ESC not in alias.out


def test_json_flag_reports_errors_as_json(indexed_read_only: Path, tsm: Any) -> None:
    result = tsm("search", "git", "--after", "not-a-date", "--json")
    assert result.code == 1
    assert result.error()["kind"] == "user_error"


# -- --open ---------------------------------------------------------------------------------
@pytest.fixture
def recording_editor(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "editor-args.txt"
    editor = tmp_path / "bin" / "vim"
    editor.parent.mkdir()
    editor.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\n')
    editor.chmod(0o755)
    return editor, log


def test_open_runs_the_editor_at_the_line(
    indexed_read_only: Path, tsm: Any, recording_editor: tuple[Path, Path]
) -> None:
    editor, log = recording_editor
    result = tsm("search", "install git", "--open", "-f", "human", env={"EDITOR": str(editor)})
    assert result.code == 0, result.err
    args = log.read_text().splitlines()
    shown = re.search(r"(notes/git-install\.md):(\d+)", result.out)
    assert shown, result.out
    assert args == [f"+{shown.group(2)}", str(indexed_read_only / shown.group(1))]


def test_open_with_a_goto_editor_and_a_result_number(
    indexed_read_only: Path, tsm: Any, recording_editor: tuple[Path, Path], tmp_path: Path
) -> None:
    editor, log = recording_editor
    code = editor.with_name("code")
    shutil.copy(editor, code)
    result = tsm("search", "install git", "--open=2", env={"VISUAL": f"{code} --wait"})
    assert result.code == 0, result.err
    second = json.loads(result.out)["results"][1]["source"]["path"]
    args = log.read_text().splitlines()
    assert args[:2] == ["--wait", "--goto"] or args[0] == "--wait"
    assert str(indexed_read_only / second) in args[-1]


def test_open_errors_are_user_errors(indexed_read_only: Path, tsm: Any) -> None:
    no_editor = tsm("search", "install git", "--open", "--json", env={"EDITOR": "", "VISUAL": ""})
    assert no_editor.code == 1 and "EDITOR" in no_editor.error()["error"] + str(
        no_editor.error().get("hint")
    )
    too_far = tsm("search", "install git", "-k", "2", "--open", "9", "--json", env={"EDITOR": "vi"})
    assert too_far.code == 1 and "no result 9" in too_far.error()["error"]
    nothing = tsm("search", "zzzqqxyzzy", "--fts-only", "--open", "--json", env={"EDITOR": "vi"})
    assert nothing.code == 1 and "list above" not in json.dumps(nothing.error()), nothing.err
    assert "no result" in nothing.error()["error"]


def test_list_fits_a_narrow_terminal_by_leaving_columns_out(
    indexed_read_only: Path, tsm: Any
) -> None:
    """Six columns cannot all fit 40 (or 30) display columns at their 8-column floors: tags,
    then type, then date are left out, and path and title stay."""
    for columns, heading in ((40, ["id", "date", "path", "title"]), (30, ["id", "path", "title"])):
        narrow = tsm("list", "-f", "human", env={"COLUMNS": str(columns)})
        assert narrow.code == 0, narrow.err
        lines = narrow.out.splitlines()
        assert lines[0].split() == heading, narrow.out
        assert max(wcwidth.width(line) for line in lines) <= columns, (columns, narrow.out)
        assert any("research/lora" in line or "research/l" in line for line in lines)


# -- completion -----------------------------------------------------------------------------
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_load(tsm: Any, tmp_path: Path, shell: str) -> None:
    result = tsm("completion", shell)
    assert result.code == 0, result.err
    assert "search" in result.out and ("--fallback" in result.out or "-l fallback" in result.out)
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} is not installed")
    script = tmp_path / f"tsm.{shell}"
    script.write_text(result.out)
    check = subprocess.run([binary, "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_completion_registers_tsm_and_kb(tsm: Any, tmp_path: Path) -> None:
    """Installed as the manual says, the script makes the shell complete both names: bash
    sourcing it (the bash-completion folder), zsh loading it from $fpath by its `#compdef`
    line or by `eval`."""
    bash_script = tmp_path / "tsm.bash"
    bash_script.write_text(tsm("completion", "bash").out)
    done = subprocess.run(
        ["bash", "-c", f'source "{bash_script}"; complete -p tsm; complete -p kb'],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[-1] for line in done.stdout.splitlines()] == ["tsm", "kb"], done.stdout
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    fpath = tmp_path / "zfunc"
    fpath.mkdir()
    (fpath / "_tsm").write_text(tsm("completion", "zsh").out)
    show = "echo tsm=$_comps[tsm] kb=$_comps[kb]"
    for load in (f"fpath=({fpath} $fpath)", ""), ("", f'eval "$(<{fpath}/_tsm)"'):
        done = subprocess.run(
            [zsh, "-f", "-c", f"{load[0]}; autoload -Uz compinit; compinit -D; {load[1]}; {show}"],
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        names = dict(pair.split("=") for pair in done.stdout.split())
        assert names["tsm"] and names["kb"], (load, done.stdout, done.stderr)


def _readme_completion_lines() -> str:
    """The manual's shell-completion commands (docs/commands.md, the sh block after "Shell
    completion")."""
    manual = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text(
        encoding="utf-8"
    )
    after = manual[manual.index("Shell completion (") :]
    return after[after.index("```sh\n") + 6 : after.index("\n```", after.index("```sh"))]


def test_completion_installed_as_the_readme_says(tmp_path: Path) -> None:
    """The manual's commands, run as they are in a new account's HOME, work and make each
    shell complete both `tsm` and `kb` the way it loads completions by itself: bash-completion
    sources the file named after the command, zsh reads $fpath, fish autoloads
    <name>.fish (and ships a kb.fish of another program that `kb` would get otherwise)."""
    home = tmp_path / "home"
    home.mkdir()
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "HOME": str(home), "PATH": path, "XDG_CONFIG_HOME": str(home / ".config")}
    done = subprocess.run(
        ["bash", "-e", "-c", _readme_completion_lines()], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    folder = home / ".local" / "share" / "bash-completion" / "completions"
    for name in ("tsm", "kb"):
        done = subprocess.run(
            ["bash", "-c", f'source "{folder / name}"; complete -p {name}'],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and done.stdout.split()[-1] == name, done.stderr
    zsh = shutil.which("zsh")
    if zsh is not None:
        show = "echo tsm=$_comps[tsm] kb=$_comps[kb]"
        load = "fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit -D"
        done = subprocess.run(
            [zsh, "-f", "-c", f"{load}; {show}"], env=env, capture_output=True, text=True
        )
        assert done.stdout.split() == ["tsm=_tsm", "kb=_tsm"], done.stdout
    fish = shutil.which("fish")
    if fish is not None:
        done = subprocess.run(
            [fish, "-c", 'complete -C "kb sta"; complete -C "tsm sta"'],  # kb first: a new shell
            env=env,
            capture_output=True,
            text=True,
        )
        names = [line.split("\t")[0] for line in done.stdout.splitlines()]
        assert names == ["start", "status", "start", "status"], done.stdout + done.stderr


def test_zsh_inserts_the_flag_a_prefix_names(tsm: Any, tmp_path: Path) -> None:
    """In a real zsh on a terminal (tmux), TAB after `tsm search --ca` writes `--category`
    into the line; it listed the flag and left the line as it was while search's query (free
    text) was completed as an empty message."""
    zsh, tmux = shutil.which("zsh"), shutil.which("tmux")
    if zsh is None or tmux is None:
        pytest.skip("zsh and tmux are needed")
    fpath = tmp_path / "zfunc"
    fpath.mkdir()
    (fpath / "_tsm").write_text(tsm("completion", "zsh").out)
    (tmp_path / ".zshrc").write_text(
        f"fpath=({fpath} $fpath); autoload -Uz compinit; compinit -u; PS1='> '\n"
    )
    server = [tmux, "-L", f"tsm-test-{os.getpid()}", "-f", "/dev/null"]
    env = {**os.environ, "HOME": str(tmp_path), "ZDOTDIR": str(tmp_path), "TERM": "xterm"}
    subprocess.run(
        [*server, "new-session", "-d", "-x", "100", "-y", "10", zsh],
        env=env,
        check=True,
        cwd=tmp_path,
    )
    try:

        def screen() -> str:
            done = subprocess.run(
                [*server, "capture-pane", "-p"], capture_output=True, text=True, check=True
            )
            return done.stdout

        def wait_for(text: str) -> str:
            for _ in range(200):
                shown = screen()
                if text in shown:
                    return shown
                time.sleep(0.1)
            return screen()

        assert ">" in wait_for(">")
        for line in ("tsm search --ca", "tsm search foo --ty"):
            subprocess.run([*server, "send-keys", "C-u", line, "Tab"], check=True)
            word = "--category" if "--ca" in line else "--type"
            shown = wait_for(line.rsplit(" ", 1)[0] + " " + word)
            assert line.rsplit(" ", 1)[0] + " " + word in shown, shown
    finally:
        subprocess.run([*server, "kill-server"], capture_output=True)


def test_completion_offers_the_document_types(tsm: Any, tmp_path: Path) -> None:
    """`--type` of search and list completes to the four types in bash, zsh and fish."""
    bash_script = tmp_path / "tsm.bash"
    bash_script.write_text(tsm("completion", "bash").out)
    lines = []
    for command in ("search", "list"):
        done = subprocess.run(
            [
                "bash",
                "-c",
                f'source "{bash_script}"; COMP_WORDS=(tsm {command} --type ""); COMP_CWORD=3;'
                f' COMP_LINE="tsm {command} --type "; COMP_POINT=${{#COMP_LINE}}; _shtab_tsm;'
                ' echo "${COMPREPLY[@]}"',
            ],
            capture_output=True,
            text=True,
        )
        lines.append(done.stdout.strip())
    assert lines == ["markdown pdf text session"] * 2, lines
    assert ":TYPE:(markdown pdf text session)" in tsm("completion", "zsh").out
    done = fish_complete(tsm, tmp_path, 'complete -C "tsm search --type "')
    names = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert names == ["markdown", "pdf", "session", "text"], done.stdout + done.stderr


def test_completion_completes_commands_and_choices(tsm: Any, tmp_path: Path) -> None:
    bash_script = tmp_path / "tsm.bash"
    bash_script.write_text(tsm("completion", "bash").out)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'source "{bash_script}"; COMP_WORDS=(tsm search --fallback ""); COMP_CWORD=3;'
            ' COMP_LINE="tsm search --fallback "; COMP_POINT=${#COMP_LINE}; _shtab_tsm;'
            ' echo "${COMPREPLY[@]}"; COMP_WORDS=(tsm sea); COMP_CWORD=1; _shtab_tsm;'
            ' echo "${COMPREPLY[@]}"',
        ],
        capture_output=True,
        text=True,
    )
    assert done.stdout.split("\n")[:2] == ["auto error fts-only", "search"], done.stderr
    done = fish_complete(tsm, tmp_path, 'complete -C "tsm sea"; complete -C "kb sea"')
    assert done.stdout.splitlines()[0].startswith("search\t"), done.stdout + done.stderr
    assert done.stdout.splitlines()[1].startswith("search\t"), done.stdout


def fish_complete(tsm: Any, tmp_path: Path, commands: str) -> subprocess.CompletedProcess[str]:
    """Run fish `commands` after sourcing `tsm completion fish`; skips without fish."""
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    fish_script = tmp_path / "tsm.fish"
    fish_script.write_text(tsm("completion", "fish").out)
    return subprocess.run(
        [fish, "-c", f'source "{fish_script}"; {commands}'], capture_output=True, text=True
    )
