"""The prompt hook's XML on the prompt-format spec's seed vault (tests/fixtures/seed-example)
through the real hook script and the installed CLI: the note first on keywords, vectors
and status is the first result Claude Code is given."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_harness import ask_hook, indexed_copy, needs_tsm, trust

pytestmark = needs_tsm

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed-example"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_copy(SEED, tmp_path_factory.mktemp("seed") / "vault")


def test_the_hook_injects_the_guide_first(seed: Path) -> None:
    trust(seed)
    run = ask_hook(seed, "LoRa モジュール 選定")
    assert run.stdout, run.stderr
    xml = run.output()["hookSpecificOutput"]["additionalContext"]
    results = ET.fromstring(xml).findall("result")
    assert results, xml
    assert results[0].findtext("source") == "knowledge/lora/lora-module-guide.md"
    assert results[0].find("source").get("status") == "current"  # type: ignore[union-attr]
