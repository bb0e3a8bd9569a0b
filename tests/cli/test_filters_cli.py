"""Filters and temporal expressions on the sample vault at a fixed "now" (2026-03-20, set by
the autouse fixture): each must return exactly the right documents."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg import Stores
from sample_vault import copy_tracked

ALL = {
    "notes/git-install.md",
    "notes/shell-setup.md",
    "notes/reading-list.txt",
    "daily/2026-03-15.md",
    "research/lora-modules.md",
    "research/vhf-tracker.md",
    "research/git-admin-guide.pdf",
    "decisions/0001-use-sqlite.md",
}


@pytest.fixture(scope="module")
def dated_vault(
    tmp_path_factory: pytest.TempPathFactory, stores: Stores, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """The sample vault indexed once, files without a written date given an old mtime (on
    PostgreSQL, into a database every test using this fixture gets)."""
    import subprocess
    import sys

    root = copy_tracked(tmp_path_factory.mktemp("dated") / "vault")
    (root / "notes" / "project.md").write_text("# Project alpha\n\nkickoff notes #proj/alpha\n")
    old = dt.datetime(2024, 5, 1).timestamp()
    for rel in (
        "notes/shell-setup.md",
        "notes/reading-list.txt",
        "research/git-admin-guide.pdf",
        "notes/project.md",
    ):
        os.utime(root / rel, (old, old))
    with stores.for_fixture(request.module.__name__, request.fixturename) as store:
        env = {**os.environ, "TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", **store}
        subprocess.run(
            [sys.executable, "-m", "tsm", "index", "-f", "json"],
            env=env,
            check=True,
            capture_output=True,
        )
        yield root


def found(tsm: Any, root: Path, *args: str) -> set[str]:
    result = tsm("search", *args, "-k", "50", "-f", "json", env={"TSM_INDEX_ROOT": str(root)})
    assert result.code == 0, result.err
    return {h["source"]["path"] for h in result.json()["results"]}


def within(got: set[str], allowed: set[str]) -> bool:
    """Some results, each one the filters let through. A search shows only what a signal
    found, so a filter's every document is listed only when the query matches them all."""
    return bool(got) and got <= allowed


def test_after_before(dated_vault: Path, tsm: Any) -> None:
    assert found(tsm, dated_vault, "notes", "--after", "2026-01", "--before", "2026-02") == {
        "research/lora-modules.md",
        "research/vhf-tracker.md",
    }


def test_year_and_last_year(dated_vault: Path, tsm: Any) -> None:
    expected = {"notes/git-install.md", "decisions/0001-use-sqlite.md"}
    assert within(found(tsm, dated_vault, "notes", "--year", "2025"), expected)
    assert within(found(tsm, dated_vault, "notes last year"), expected)
    assert within(found(tsm, dated_vault, "去年のメモ"), expected)


def test_recent_span(dated_vault: Path, tsm: Any) -> None:
    assert found(tsm, dated_vault, "notes", "--recent", "2w") == {"daily/2026-03-15.md"}


@pytest.mark.parametrize("query", ["先月の無線", "無線 last month", "無線 1ヶ月前"])
def test_relative_month_expressions(dated_vault: Path, tsm: Any, query: str) -> None:
    assert found(tsm, dated_vault, query) == {"research/lora-modules.md"}


def test_explicit_flag_wins_over_query(dated_vault: Path, tsm: Any) -> None:
    assert found(tsm, dated_vault, "先月の無線", "--year", "2025") == {
        "notes/git-install.md",
        "decisions/0001-use-sqlite.md",
    }


def test_time_only_query_lists_recent_documents(dated_vault: Path, tsm: Any) -> None:
    result = tsm("search", "先月", "-f", "json", env={"TSM_INDEX_ROOT": str(dated_vault)})
    data = result.json()
    assert [h["source"]["path"] for h in data["results"]] == ["research/lora-modules.md"]
    assert data["filters"]["date_expression"] == "先月"


@pytest.mark.parametrize("query", ["13月のメモ", "in Smarch notes"])
def test_invalid_expressions_apply_no_filter(dated_vault: Path, tsm: Any, query: str) -> None:
    result = tsm("search", query, "-f", "json", env={"TSM_INDEX_ROOT": str(dated_vault)})
    assert "after" not in result.json()["filters"]


def test_path_prefix_on_boundaries(dated_vault: Path, tsm: Any) -> None:
    research = {p for p in ALL if p.startswith("research/")}
    assert within(found(tsm, dated_vault, "notes", "--path", "research"), research)
    assert found(tsm, dated_vault, "notes", "--path", "research/") == found(
        tsm, dated_vault, "notes", "--path", "research"
    )
    assert found(tsm, dated_vault, "notes", "--path", "res") == set()
    assert within(
        found(tsm, dated_vault, "git notes 狩猟", "--path", "daily", "--path", "decisions"),
        {"daily/2026-03-15.md", "decisions/0001-use-sqlite.md"},
    )


def test_top_k_applies_after_filters(dated_vault: Path, tsm: Any) -> None:
    result = tsm(
        "search",
        "install git",
        "-k",
        "1",
        "--path",
        "research/",
        "-f",
        "json",
        env={"TSM_INDEX_ROOT": str(dated_vault)},
    )
    data = result.json()
    assert [h["source"]["path"] for h in data["results"]] == ["research/git-admin-guide.pdf"]


def test_tags_case_insensitive_and_nested(dated_vault: Path, tsm: Any) -> None:
    setup = {"notes/git-install.md", "notes/shell-setup.md"}
    assert within(found(tsm, dated_vault, "notes", "--tag", "setup"), setup)
    assert found(tsm, dated_vault, "notes", "--tag", "SETUP") == found(
        tsm, dated_vault, "notes", "--tag", "setup"
    )
    assert found(tsm, dated_vault, "notes", "--tag", "#setup", "--tag", "git") == {
        "notes/git-install.md"
    }
    assert found(tsm, dated_vault, "notes", "--tag", "proj") == {"notes/project.md"}
    assert found(tsm, dated_vault, "notes", "--tag", "狩猟") == {"daily/2026-03-15.md"}


def test_type_filter(dated_vault: Path, tsm: Any) -> None:
    assert found(tsm, dated_vault, "git", "--type", "pdf") == {"research/git-admin-guide.pdf"}
    assert within(
        found(tsm, dated_vault, "git", "--type", "text", "--type", "pdf"),
        {"research/git-admin-guide.pdf", "notes/reading-list.txt"},
    )


def test_category_filter(dated_vault: Path, tsm: Any) -> None:
    """--category keeps the documents of the named categories (OR), whatever the case; the
    flag is declared once (core/request.py) and reaches the daemon and MCP the same way."""
    assert within(
        found(tsm, dated_vault, "git", "--category", "research"),
        {p for p in ALL if p.startswith("research/")},
    )
    both = found(tsm, dated_vault, "git notes", "--category", "Daily", "--category", "decisions")
    assert within(both, {"daily/2026-03-15.md", "decisions/0001-use-sqlite.md"})
    assert found(tsm, dated_vault, "git", "--category", "nowhere") == set()
    result = tsm(
        "search",
        "git",
        "--category",
        "research",
        "-f",
        "json",
        env={"TSM_INDEX_ROOT": str(dated_vault)},
    )
    assert result.json()["filters"]["category"] == ["research"]


def test_status_penalty_and_tag_entity_in_breakdown(dated_vault: Path, tsm: Any) -> None:
    result = tsm(
        "search", "SQLite storage decision", "-f", "json", env={"TSM_INDEX_ROOT": str(dated_vault)}
    )
    hit = next(
        h for h in result.json()["results"] if h["source"]["path"] == "decisions/0001-use-sqlite.md"
    )
    assert hit["score_breakdown"]["status"] == 0.5 and hit["source"]["status"] == "superseded"
    tagged = tsm(
        "search", "lora", "--fts-only", "-f", "json", env={"TSM_INDEX_ROOT": str(dated_vault)}
    ).json()["results"][0]
    assert tagged["source"]["path"] == "research/lora-modules.md"
    assert tagged["score_breakdown"]["entity"] > 0


def test_synonyms_expand_but_never_outrank_exact_hits(dated_vault: Path, tsm: Any) -> None:
    (dated_vault / ".tsm" / "synonyms.csv").write_text("# comment\nhunting,狩猟\n")
    try:
        result = tsm(
            "search",
            "hunting",
            "--fts-only",
            "-f",
            "json",
            env={"TSM_INDEX_ROOT": str(dated_vault)},
        )
        ranked = [h["source"]["path"] for h in result.json()["results"]]
        assert ranked[0] == "research/vhf-tracker.md"  # says "Hunting dogs": the exact hit
        assert "daily/2026-03-15.md" in ranked  # 狩猟 only: found through the synonym
    finally:
        (dated_vault / ".tsm" / "synonyms.csv").unlink()


def test_related_documents_from_links(dated_vault: Path, tsm: Any) -> None:
    result = tsm(
        "search",
        "LoRa モジュール 比較",
        "-k",
        "1",
        "-f",
        "json",
        env={"TSM_INDEX_ROOT": str(dated_vault)},
    )
    hit = result.json()["results"][0]
    assert hit["source"]["path"] == "research/lora-modules.md"
    related = {r["path"]: r for r in hit["related"]}
    assert related["research/vhf-tracker.md"]["strength"] > 1.0  # linked both ways


def test_query_date_with_no_match_falls_back_to_any_date(dated_vault: Path, tsm: Any) -> None:
    result = tsm("search", "2019年の無線", "-f", "json", env={"TSM_INDEX_ROOT": str(dated_vault)})
    data = result.json()
    assert data["results"] and "after" not in data["filters"]
    assert any("nothing is dated" in w for w in data["warnings"])
