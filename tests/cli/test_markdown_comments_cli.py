"""HTML comments are not part of a note (CommonMark): a book translated in place, as the
Japanese Rust book is, keeps the English original in `<!-- … -->` above each Japanese
paragraph and heading. Through the real CLI on tests/fixtures/rust-book-ja: no title,
section, snippet or searchable word comes from inside a comment; code that holds `<!--`
is code and stays."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rust-book-ja"
CHAPTER = "src/ch09-00-error-handling.md"
SECTION = "src/ch09-02-recoverable-errors.md"
# Words that appear only inside the fixture's comments.
COMMENTED = ("Error Handling", "Recoverable Errors", "Propagating", "Filename", "propagation")


@pytest.fixture
def book(tmp_path: Path, tsm: Any) -> Path:
    root = tmp_path / "book-ja"
    shutil.copytree(FIXTURE, root)
    done = tsm("index", "-f", "json", env={"TSM_INDEX_ROOT": str(root)})
    assert done.code == 0, done.err
    return root


def run(tsm: Any, root: Path, *args: str) -> Any:
    done = tsm(*args, "-f", "json", env={"TSM_INDEX_ROOT": str(root)})
    assert done.code == 0, done.err
    return done.json()


def no_comment_in(text: str) -> None:
    text = re.sub(r"// <!-- this is code[^>…]*(?:-->|…)", "", text)  # the listing's own line
    assert "<!--" not in text and "-->" not in text, text
    for words in COMMENTED:
        assert words not in text, (words, text)


def test_title_and_sections_are_the_translation(tsm: Any, book: Path) -> None:
    chapter = run(tsm, book, "info", CHAPTER)
    assert chapter["title"] == "エラー処理"
    assert chapter["sections"] == ["エラー処理"]
    section = run(tsm, book, "info", SECTION)
    assert section["sections"] == [
        "Resultで回復可能なエラー",
        "Resultで回復可能なエラー > エラーを委譲する",
    ]
    got = run(tsm, book, "get", SECTION)
    assert got["sections"] == section["sections"]
    assert "<!--" in got["text"]  # `get` gives the file as written


def test_search_shows_no_comment(tsm: Any, book: Path) -> None:
    found = run(tsm, book, "search", "ファイル 作成 エラー 委譲", "-k", "20")
    assert {r["source"]["path"] for r in found["results"]} == {CHAPTER, SECTION}
    for result in found["results"]:
        no_comment_in(result["snippet"])
        no_comment_in(result["section"])
        no_comment_in(result["source"]["title"])
    code = run(tsm, book, "search", "greeting_file", "--fts-only")
    assert [r["source"]["path"] for r in code["results"]] == [SECTION]
    assert "<!-- this is code" in code["results"][0]["snippet"]  # code keeps its `<!--`


def test_words_only_in_comments_are_not_found(tsm: Any, book: Path) -> None:
    for words in ("production", "Propagating", "variant"):
        found = run(tsm, book, "search", words, "--fts-only")
        assert found["results"] == [], (words, found["results"])
