"""The README documents every command and every setting; every command has help text."""

from __future__ import annotations

import re
from pathlib import Path

from tsm.cli.main import build_parser
from tsm.config import SETTINGS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


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
        assert re.search(rf"`tsm {re.escape(name)}\b", README), f"README lacks `tsm {name}`"


def test_every_setting_is_in_the_readme_table() -> None:
    for setting in SETTINGS:
        assert f"`{setting.env}`" in README, f"README lacks {setting.env}"
        assert f"`{setting.key}`" in README, f"README lacks {setting.key}"
    for env in (
        "TSM_INDEX_ROOT",
        "TSM_STATE_DIR",
        "TSM_DB_PATH",
        "TSM_DEBUG",
        "TSM_NOW",
        "TSM_SNIPPET_BUDGET",
        "TSM_INJECT_MIN_SCORE",
        "TSM_INJECT_TOP_K",
        "TSM_BIN",
        "TSM_HOOK_TIMEOUT",
        "TSM_INJECT_MIN_RELEVANCE",
        "TSM_INJECT_MIN_COVERAGE",
        "TSM_INJECT_MIN_DROP",
    ):
        assert f"`{env}`" in README, f"README lacks {env}"


def test_plugin_skill_matches_root_skill() -> None:
    root = (Path(__file__).resolve().parent.parent / "SKILL.md").read_text(encoding="utf-8")
    plugin = (
        Path(__file__).resolve().parent.parent / "plugin" / "skills" / "search" / "SKILL.md"
    ).read_text(encoding="utf-8")
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


def test_the_contracts_the_readme_cites_are_in_the_repository() -> None:
    root = Path(__file__).resolve().parent.parent
    for cited in re.findall(r"`(docs/[\w.-]+\.md)`", README):
        assert (root / cited).is_file(), cited
    assert "shared/specs" not in README
