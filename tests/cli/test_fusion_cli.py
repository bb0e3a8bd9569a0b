"""Fusion through the real CLI on the prompt-format spec's seed vault (nine notes, copied
from the spec's example into tests/fixtures/seed-example): a signal meant for the other
language must not decide a same-language query against two stronger signals."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed-example"
GUIDE = "knowledge/lora/lora-module-guide.md"
SURVEY = "knowledge/lora/dog-tracker-competitors.md"
QUERY = "LoRa モジュール 選定"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seed") / "vault"
    shutil.copytree(SEED, root)
    return root


@pytest.fixture
def indexed(seed: Path, tsm: Any) -> dict[str, str]:
    env = {"TSM_INDEX_ROOT": str(seed)}
    if not (seed / ".tsm" / "tsm.db").exists():
        done = tsm("index", "-f", "json", env=env)
        assert done.code == 0, done.err
    return env


def search(tsm: Any, env: dict[str, str], *flags: str) -> list[dict[str, Any]]:
    done = tsm("search", QUERY, "-f", "json", *flags, env=env)
    assert done.code == 0, done.err
    return done.json()["results"]


def test_the_guide_first_on_keywords_vectors_and_status_ranks_first(
    tsm: Any, indexed: dict[str, str]
) -> None:
    """The guide is first on keywords and on vectors and is `current`; the survey is a
    `draft` whose only edge was the bridge's English 'module' matching the file name in a
    link. Both are Japanese, as the query is: the translation does not apply."""
    hits = search(tsm, indexed)
    assert [h["source"]["path"] for h in hits[:2]] == [GUIDE, SURVEY]
    guide, survey = (h["score_breakdown"] for h in hits[:2])
    assert guide["fts"] >= survey["fts"] and guide["vector"] >= survey["vector"]
    assert guide["bridge"] is None and survey["bridge"] is None
    assert guide["entity"] == survey["entity"]  # both tagged lora: equal on the entity signal


def test_a_same_language_query_ranks_as_with_the_bridge_off(
    tsm: Any, indexed: dict[str, str]
) -> None:
    on = search(tsm, indexed)
    off = search(tsm, indexed | {"TSM_BRIDGE": "0"})
    assert [(h["source"]["path"], h["score"]) for h in on] == [
        (h["source"]["path"], h["score"]) for h in off
    ]
