"""The prompt hook on a book translated in place (tests/fixtures/rust-book-ja: the English
original in HTML comments above the Japanese): what Claude Code receives holds the
translation, never a comment, through the real hook script, CLI and embedding model."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_harness import (
    TSM,
    base_env,
    claude_input,
    indexed_copy,
    needs_tsm,
    run_hook,
    trust,
)

pytestmark = needs_tsm

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rust-book-ja"


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_copy(FIXTURE, tmp_path_factory.mktemp("book") / "book-ja")


def test_injected_text_holds_no_comment(book: Path) -> None:
    trust(book)
    prompt = "ファイルが存在しないときにファイルを作成するエラー処理はどう書く？"
    # Every floor open: on a two-note vault the hook would rightly abstain, and what is
    # tested here is the text it injects.
    floors = {"TSM_INJECT_MIN_RELEVANCE": "-1", "TSM_INJECT_MIN_COVERAGE": "0"}
    env = base_env(TSM_BIN=str(TSM), TSM_HOOK_TIMEOUT="120", TSM_INJECT_MIN_DROP="0", **floors)
    payload = claude_input("UserPromptSubmit", book, prompt=prompt)
    run = run_hook("user_prompt_submit", payload, env=env, cwd=book, timeout=300)
    assert run.returncode == 0, run.stderr
    xml = run.output()["hookSpecificOutput"]["additionalContext"]
    results = ET.fromstring(xml).findall("result")
    assert "src/ch09-02-recoverable-errors.md" in [r.findtext("source") for r in results]
    for result in results:
        for field in ("title", "section", "snippet"):
            text = result.findtext(field) or ""
            text = re.sub(r"// <!-- this is code[^>…]*(?:-->|…)", "", text)  # the listing's
            assert "<!--" not in text and "-->" not in text, (field, text)
            assert "To handle the failure" not in text and "Filename" not in text, text
