"""The line a hit's passage starts on comes from the index (migration m008): the chunker
counts it, the store keeps it, a search hydrates it with the hit (`source.line` in the
JSON), and the terminal's listing (`path:LINE`) and `--open` use it. Right under
frontmatter, after blank lines, in a long section cut into several chunks (paragraphs that
begin alike, Japanese sentences), and none for PDFs and transcripts. Through the real CLI
on real notes, on either store (TSM_TEST_STORE=postgres)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from claude_home import project_dir

SESSION = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"

FRONTMATTER = """---
title: Frontmatter lines
tags: [lines]
created: 2026-01-02
---

# Frontmatter lines

The zephyrine harness sits below five lines of frontmatter.
"""

SECTIONS = """# Sections

Intro words here.

## First

Alpha paragraph about nothing much.

## Second



Blank lines above me; the quillwort section starts here.
More of the second section.
"""

# Three paragraphs of one line each, over 1000 characters together, so each is a chunk of
# its own; all three begin with the same words, which the old lookup took for the first.
_OPENING = "The trap line was checked at dawn and"
LONG = "# Trap log\n\n" + "\n\n".join(
    f"{_OPENING} {word} " + "the snow was deep and the wind was cold. " * 13
    for word in ("nothing", "marten", "wolverine")
)

# One Japanese paragraph of 25 sentences, one a line, of 48 characters each: the chunker
# packs 20 into the first chunk (48 x 20 + 2 x 19 <= 1000), so the second starts at the 21st.
_SENTENCES = [
    (f"第{i:02d}文" + ("ヤマドリを見た" if i == 21 else "山道を歩いた")).ljust(47, "ね") + "。"
    for i in range(1, 26)
]
JAPANESE = "---\ntitle: 山の記録\n---\n# 山の記録\n\n" + "\n".join(_SENTENCES) + "\n"

NOTES = {
    "notes/lines-frontmatter.md": FRONTMATTER,
    "notes/lines-sections.md": SECTIONS,
    "notes/lines-long.md": LONG,
    "notes/lines-ja.md": JAPANESE,
}

# (query, note, words on the line where the hit's chunk starts)
CASES = [
    ("zephyrine", "notes/lines-frontmatter.md", "The zephyrine harness"),
    ("quillwort", "notes/lines-sections.md", "Blank lines above me"),
    ("wolverine", "notes/lines-long.md", "dawn and wolverine"),
    ("ヤマドリ", "notes/lines-ja.md", "第21文ヤマドリ"),
]


def line_of(text: str, words: str) -> int:
    assert text.count(words) == 1, words
    return text[: text.index(words)].count("\n") + 1


@pytest.fixture
def notes(vault: Path, tsm: Any) -> Path:
    for path, text in NOTES.items():
        (vault / path).write_text(text, encoding="utf-8")
    done = tsm("index", "-f", "json")
    assert done.code == 0, done.err
    return vault


def top_hit(tsm: Any, query: str, *flags: str) -> dict[str, Any]:
    found = tsm("search", query, "--fts-only", "-k", "3", *flags, "-f", "json")
    assert found.code == 0, found.err
    return found.json()["results"][0]


def test_each_hit_has_the_line_its_passage_starts_on(notes: Path, tsm: Any) -> None:
    for query, path, words in CASES:
        expected = line_of(NOTES[path], words)
        hit = top_hit(tsm, query)
        assert hit["source"]["path"] == path, (query, hit["source"])
        assert hit["source"]["line"] == expected, (query, hit["text"][:80])
        human = tsm("search", query, "--fts-only", "-k", "3", "-f", "human")
        assert human.code == 0, human.err
        assert f"{path}:{expected}" in human.out, (query, human.out)


def test_open_starts_the_editor_on_the_hit_line(notes: Path, tsm: Any, tmp_path: Path) -> None:
    log = tmp_path / "editor-args.txt"
    editor = tmp_path / "bin" / "vim"
    editor.parent.mkdir()
    editor.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\n')
    editor.chmod(0o755)
    for query, path, words in CASES[2:]:
        opened = tsm("search", query, "--fts-only", "--open", "1", env={"EDITOR": str(editor)})
        assert opened.code == 0, opened.err
        expected = line_of(NOTES[path], words)
        assert log.read_text().splitlines() == [f"+{expected}", str(notes / path)], query


def test_pdf_pages_and_transcript_turns_have_no_line(notes: Path, tsm: Any) -> None:
    transcript = project_dir(notes) / "session.jsonl"
    shutil.copy(SESSION, transcript)
    assert tsm("ingest-session", str(transcript), "-f", "json").code == 0
    for query, kind in (("git", "pdf"), ("狩猟免許 更新 書類", "session")):
        hit = top_hit(tsm, query, "--type", kind)
        assert hit["source"]["type"] == kind and hit["source"]["line"] is None, hit["source"]
        human = tsm("search", query, "--fts-only", "--type", kind, "-f", "human")
        assert human.code == 0, human.err
        assert not re.search(re.escape(hit["source"]["path"]) + r":\d", human.out), human.out


def clear_lines(root: Path) -> None:
    """The chunks as an index from before migration m008 holds them: no line."""
    from tsm.config import load
    from tsm.store.connect import Transaction, open_store

    conn = open_store(load(root, os.environ))
    try:
        with Transaction(conn):
            conn.execute("UPDATE chunks SET line = NULL")
    finally:
        conn.close()


def test_a_passage_indexed_before_lines_were_kept_is_looked_up_in_the_note(
    notes: Path, tsm: Any
) -> None:
    """Until its file is indexed again: the JSON says null, the listing reads the note."""
    clear_lines(notes)
    query, path, words = CASES[0]
    assert top_hit(tsm, query)["source"]["line"] is None
    human = tsm("search", query, "--fts-only", "-k", "3", "-f", "human")
    assert f"{path}:{line_of(NOTES[path], words)}" in human.out, human.out
    (notes / path).write_text(NOTES[path] + "\nOne more line.\n", encoding="utf-8")
    assert tsm("index", "-f", "json").code == 0
    assert top_hit(tsm, query)["source"]["line"] == line_of(NOTES[path], words)
