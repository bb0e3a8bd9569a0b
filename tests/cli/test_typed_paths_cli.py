"""One rule for every path a user types (`search --path`, `get`, `info`): read from the
current folder, as every other tool reads a path, and from the index root when that does
not lead into it; `get` and `info` also take a path as tsm prints it. A --path that no
document is under says so, with the folder it was read as. Through the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

NOTES = {
    "docs/en/Plugins/hooks.md": "# Plugin hooks\n\nA plugin registers hooks for zsh prompts.\n",
    "docs/en/setup.md": "# Setup\n\nInstall zsh first.\n",
    "notes/zsh.md": "# Zsh\n\nzsh is my login shell.\n",
}
HOOKS = "docs/en/Plugins/hooks.md"


@pytest.fixture
def root(tmp_path: Path, tsm: Any) -> Path:
    root = tmp_path / "workspace"
    for name, text in NOTES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "tsm.toml").write_text("", encoding="utf-8")  # found from any folder below
    done = tsm("index", "--no-embed", "-f", "json", cwd=root)
    assert done.code == 0, done.err
    return root


def paths(tsm: Any, cwd: Path, *args: str) -> list[str]:
    done = tsm("search", "zsh", "--fts-only", "-f", "json", *args, cwd=cwd)
    assert done.code == 0, done.err
    return sorted(r["source"]["path"] for r in done.json()["results"])


def test_search_path_is_read_from_the_current_folder(tsm: Any, root: Path) -> None:
    docs = root / "docs"
    assert paths(tsm, docs, "--path", "en/Plugins") == [HOOKS]
    assert paths(tsm, docs, "--path", ".") == [HOOKS, "docs/en/setup.md"]
    assert paths(tsm, docs / "en" / "Plugins", "--path", "../setup.md") == ["docs/en/setup.md"]
    assert paths(tsm, docs, "--path", str(root / "notes")) == ["notes/zsh.md"]
    assert paths(tsm, root, "--path", "docs/en/Plugins") == [HOOKS]


def test_from_outside_the_root_the_path_is_read_from_the_root(
    tsm: Any, root: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = tsm(
        "search", "zsh", "--fts-only", "-f", "json", "--path", "notes",
        cwd=elsewhere, env={"TSM_INDEX_ROOT": str(root)},
    )  # fmt: skip
    assert found.code == 0, found.err
    assert [r["source"]["path"] for r in found.json()["results"]] == ["notes/zsh.md"]
    above = tsm(
        "search", "zsh", "--fts-only", "-f", "json", "--path", "workspace/notes",
        cwd=root.parent, env={"TSM_INDEX_ROOT": str(root)},
    )  # fmt: skip
    assert [r["source"]["path"] for r in above.json()["results"]] == ["notes/zsh.md"]


def test_a_path_no_document_is_under_says_where_it_looked(tsm: Any, root: Path) -> None:
    docs = root / "docs"
    found = tsm("search", "zsh", "--path", "Plugins", "--fts-only", "-f", "json", cwd=docs)
    assert found.code == 0, found.err
    assert found.json()["results"] == []
    assert any(str(docs / "Plugins") in w for w in found.json()["warnings"]), found.out
    human = tsm("search", "zsh", "--path", "Plugins", "--fts-only", "-f", "human", cwd=docs)
    assert "No results." in human.out and str(docs / "Plugins") in human.out
    # A path that has documents, with a query that finds none of them: no such line.
    quiet = tsm("search", "kumquat", "--path", "en", "--fts-only", "-f", "json", cwd=docs)
    assert quiet.json()["results"] == [] and quiet.json()["warnings"] == []


def test_a_path_outside_the_root_is_a_user_error(tsm: Any, root: Path) -> None:
    done = tsm("search", "zsh", "--path", "../..", "-f", "json", cwd=root / "docs")
    assert done.code == 1
    assert "outside the index root" in done.error()["error"]


def test_get_and_info_read_the_same_way(tsm: Any, root: Path) -> None:
    plugins = root / "docs" / "en" / "Plugins"
    for command in ("get", "info"):
        for cwd, typed in (
            (plugins, "hooks.md"),  # from the current folder
            (root / "docs", "en/Plugins/hooks.md"),
            (root / "notes", "../docs/en/Plugins/hooks.md"),
            (root / "docs", HOOKS),  # as tsm prints it
            (root.parent, f"workspace/{HOOKS}"),  # from above the root
        ):
            # From above the root, tsm.toml is not found: the root is named.
            done = tsm(command, typed, "-f", "json", cwd=cwd, env={"TSM_INDEX_ROOT": str(root)})
            assert done.code == 0, (command, typed, done.err)
            assert done.json()["path"] == HOOKS


def test_the_current_folder_wins_over_the_root(tsm: Any, root: Path) -> None:
    """`setup.md` typed in docs/en is docs/en/setup.md even when the root has one too."""
    (root / "setup.md").write_text("# Root setup\n\nzsh at the root.\n", encoding="utf-8")
    assert tsm("index", "--no-embed", "-f", "json", cwd=root).code == 0
    done = tsm("info", "setup.md", "-f", "json", cwd=root / "docs" / "en")
    assert done.json()["path"] == "docs/en/setup.md"
    assert paths(tsm, root / "docs" / "en", "--path", "setup.md") == ["docs/en/setup.md"]
