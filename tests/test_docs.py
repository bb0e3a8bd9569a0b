"""The manual (README.md and the pages of docs/) documents every command and every setting,
every relative link in it leads somewhere, and every `tsm` command and flag it shows exists in
the real CLI's help; every command has help text."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tsm.cli.main import build_parser
from tsm.config import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
README_PATH = ROOT / "README.md"
README = README_PATH.read_text(encoding="utf-8")
PAGES = [README_PATH, *sorted((ROOT / "docs").glob("*.md"))]
MANUAL = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")

FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.M | re.S)
INLINE_CODE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# `tsm WORD` where WORD is a word of its own (not `tsm http://…`, `tsm.toml` or `tsm/`).
COMMAND_USE = re.compile(r"(?:^|(?<=[\s(\"'`;|&]))(?:tsm|kb) ([a-z][a-z-]*)(?=\s|$)")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def commands() -> dict[str, str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {
        name: (p.description or "")
        + (next((c.help or "" for c in sub._choices_actions if c.dest == name), ""))
        for name, p in sub.choices.items()
    }  # type: ignore[attr-defined]


def test_every_command_is_documented_and_has_help() -> None:
    for name, help_text in commands().items():
        assert help_text.strip(), f"tsm {name} has no help text"
        assert re.search(rf"`tsm {re.escape(name)}\b", MANUAL), f"the manual lacks `tsm {name}`"


def test_every_setting_is_in_the_configuration_table() -> None:
    for setting in SETTINGS:
        assert f"`{setting.env}`" in CONFIGURATION, f"docs/configuration.md lacks {setting.env}"
        assert f"`{setting.key}`" in CONFIGURATION, f"docs/configuration.md lacks {setting.key}"
    for env in ("TSM_INDEX_ROOT", "TSM_STATE_DIR", "TSM_DB_PATH", "TSM_DEBUG", "TSM_NOW"):
        assert f"`{env}`" in CONFIGURATION, f"docs/configuration.md lacks {env}"
    for env in (
        "TSM_SNIPPET_BUDGET",
        "TSM_INJECT_MIN_SCORE",
        "TSM_INJECT_TOP_K",
        "TSM_BIN",
        "TSM_HOOK_TIMEOUT",
        "TSM_INJECT_MIN_RELEVANCE",
        "TSM_INJECT_MIN_COVERAGE",
        "TSM_INJECT_MIN_DROP",
    ):
        assert f"`{env}`" in MANUAL, f"the manual lacks {env}"


def test_the_readme_is_a_first_screen_that_links_every_page() -> None:
    assert len(README.splitlines()) <= 200
    linked = {target.split("#")[0] for target in LINK.findall(README)}
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in linked, f"README.md does not link docs/{page.name}"


def _without_code(text: str) -> str:
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces
    as hyphens, a repeated heading numbered."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text("utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_every_relative_link_resolves() -> None:
    checked = 0
    for page in PAGES:
        for target in LINK.findall(_without_code(page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} links {target}"
            assert resolved.exists(), f"{where}: no such file"
            if anchor and resolved.suffix == ".md":
                assert anchor in _anchors(resolved), f"{where}: no such heading"
            checked += 1
    assert checked >= 20, checked


def _code(text: str) -> list[str]:
    """Every inline code span and every line of a fenced block."""
    lines = [line for block in FENCE.findall(text) for line in block.splitlines()]
    return INLINE_CODE.findall(FENCE.sub("", text)) + lines


def _arguments(rest: str) -> str:
    """What follows `tsm COMMAND` up to the end of that command: a closing `$(…)`, a pipe,
    `;`, `&&` or a shell comment outside the synopsis's brackets."""
    depth = 0
    for i, char in enumerate(rest):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth <= 0 and (
            char in ");|" or rest.startswith("&&", i) or (char == "#" and rest[i - 1 : i] == " ")
        ):
            return rest[:i]
    return rest


def _flags(arguments: str) -> list[str]:
    """The options among a command's arguments: none after a bare `--`, and a value given
    with `=` is not one (`--query=-foo`)."""
    options = re.split(r"(?:^|\s)--(?:\s|$)", arguments, maxsplit=1)[0]
    return FLAG.findall(re.sub(r"=\S*", "", options))


@functools.cache
def cli_help(*words: str) -> str | None:
    """`tsm WORDS --help` as the real CLI prints it; None when it has no such command."""
    done = subprocess.run(
        [sys.executable, "-m", "tsm", *words, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    return done.stdout if done.returncode == 0 else None


def _subcommands(help_text: str) -> set[str]:
    """The commands a help text lists under its positional arguments."""
    listed = help_text.split("positional arguments:", 1)[-1].split("options:", 1)[0]
    return set(re.findall(r"^ {4}([a-z][a-z-]*)(?: |$)", listed, re.M))


def test_every_documented_command_and_flag_exists() -> None:
    """Each `tsm COMMAND [SUBCOMMAND] --flag` the manual shows, checked against the help the
    real CLI prints for that command."""
    uses: list[tuple[tuple[str, ...], list[str], str]] = []
    for page in PAGES:
        for code in _code(page.read_text(encoding="utf-8")):
            for use in COMMAND_USE.finditer(code):
                rest = _arguments(code[use.end() :])
                words = rest.split()
                uses.append(((use.group(1), *words[:1]), _flags(rest), code))
    assert len(uses) >= 50, len(uses)
    with ThreadPoolExecutor(4) as pool:  # one process per command: the help is the CLI's
        list(pool.map(cli_help, sorted({use[0][0] for use in uses})))
    for (command, *following), flags, code in uses:
        # A command the top-level help does not list (`tsm daemon`, internal) still has its own.
        command_help = cli_help(command)
        assert command_help, f"the manual shows `tsm {command}`, which does not exist: {code}"
        words: tuple[str, ...] = (command,)
        if following and following[0] in _subcommands(command_help):
            words = (command, following[0])
        known = set(FLAG.findall(cli_help(*words) or ""))
        for flag in flags:
            assert flag in known, f"`tsm {' '.join(words)}` has no {flag}: {code}"


def test_plugin_skill_matches_root_skill() -> None:
    root = (ROOT / "SKILL.md").read_text(encoding="utf-8")
    plugin = (ROOT / "plugin" / "skills" / "search" / "SKILL.md").read_text(encoding="utf-8")
    assert root.split("# Searching", 1)[1] == plugin.split("# Searching", 1)[1]


def test_the_tsm_toml_scaffold_shows_the_real_defaults() -> None:
    """`tsm init` writes a commented tsm.toml; a value it shows must be the default in force."""
    from tsm.core.scaffolds import TSM_TOML_SCAFFOLD

    defaults = {s.key: s for s in SETTINGS}
    section = ""
    checked = []
    for line in TSM_TOML_SCAFFOLD.splitlines():
        if match := re.match(r"# \[+(\w+)\]+", line):
            section = match.group(1)
        elif (match := re.match(r"# (\w+) = ([\d.]+)", line)) and (
            setting := defaults.get(f"{section}.{match.group(1)}")
        ):
            assert setting.type(match.group(2)) == setting.default, setting.key
            checked.append(setting.key)
    assert "sessions.weight" in checked and len(checked) >= 4, checked


def test_the_contracts_the_manual_cites_are_in_the_repository() -> None:
    for cited in re.findall(r"`(docs/[\w.-]+\.md)`", MANUAL):
        assert (ROOT / cited).is_file(), cited
    assert "shared/specs" not in MANUAL
