"""Heading-first chunking: whole short sections, paragraph then sentence splits, no lost text."""

from __future__ import annotations

import random
import re

import pytest

from tsm.models import Chunk, Section
from tsm.text.chunk import chunk_sections, split_pieces, split_text


def squash(text: str) -> str:
    """Text modulo whitespace: what must survive chunking."""
    return re.sub(r"\s+", "", text)


def assert_lossless(text: str, pieces: list[str], max_chars: int) -> None:
    assert all(len(p) <= max_chars for p in pieces), [len(p) for p in pieces]
    assert all(p.strip() for p in pieces)  # no blank chunks
    assert squash("".join(pieces)) == squash(text)


def test_short_section_stays_whole() -> None:
    text = "# ignored\n\nFirst paragraph.\n\nSecond paragraph. With two sentences."
    assert split_text(text, 1000) == [text.strip()]
    assert split_text("  padded  \n", 1000) == ["padded"]


def test_exactly_max_chars_is_not_split() -> None:
    text = "a" * 50 + "\n\n" + "b" * 48
    assert len(text) == 100
    assert split_text(text, 100) == [text]


def test_empty_text_gives_no_chunks() -> None:
    assert split_text("", 100) == []
    assert split_text(" \n\n ", 100) == []


def test_long_section_splits_on_paragraphs() -> None:
    paras = [f"Paragraph {i} " + "word " * 15 for i in range(6)]
    text = "\n\n".join(p.strip() for p in paras)
    pieces = split_text(text, 200)
    assert_lossless(text, pieces, 200)
    # Every piece is made of whole paragraphs.
    for piece in pieces:
        for para in piece.split("\n\n"):
            assert para.strip() in [p.strip() for p in paras]
    assert len(pieces) > 1


def test_paragraphs_are_packed_greedily() -> None:
    text = "\n\n".join(["a" * 40, "b" * 40, "c" * 40, "d" * 40])
    assert split_text(text, 90) == ["a" * 40 + "\n\n" + "b" * 40, "c" * 40 + "\n\n" + "d" * 40]


def test_paragraph_separator_with_blank_whitespace_lines() -> None:
    text = "a" * 40 + "\n  \t\n\n" + "b" * 40
    assert split_text(text, 50) == ["a" * 40, "b" * 40]


def test_long_paragraph_splits_on_english_sentences() -> None:
    text = "First sentence here. Is this the second? Yes, the third! And v1.2 stays whole."
    pieces = split_text(text, 25)
    assert pieces == [
        "First sentence here.",
        "Is this the second?",
        "Yes, the third!",
        "And v1.2 stays whole.",
    ]


def test_long_paragraph_splits_on_japanese_sentences() -> None:
    text = "狩猟免許を取得した。" + "罠を仕掛けた！" + "鹿はかかったか？" + "まだ分からない。"
    pieces = split_text(text, 12)
    assert pieces == [
        "狩猟免許を取得した。",
        "罠を仕掛けた！",
        "鹿はかかったか？",
        "まだ分からない。",
    ]


def test_sentences_are_packed_up_to_the_limit() -> None:
    text = "一文目です。二文目です。三文目です。四文目です。"
    pieces = split_text(text, 14)
    assert_lossless(text, pieces, 14)
    assert pieces[0].startswith("一文目です。") and "二文目です。" in pieces[0]


def test_unbreakable_run_is_hard_cut() -> None:
    text = "x" * 250
    assert split_text(text, 100) == ["x" * 100, "x" * 100, "x" * 50]
    ja = "あ" * 25
    assert split_text(ja, 10) == ["あ" * 10, "あ" * 10, "あ" * 5]


@pytest.mark.parametrize("max_chars", [15, 40, 120, 500])
def test_random_texts_never_exceed_max_and_lose_nothing(max_chars: int) -> None:
    rng = random.Random(max_chars)
    words = [
        "alpha",
        "beta",
        "狩猟",
        "免許を取得した。",
        "v1.2",
        "end.",
        "why?",
        "wow!",
        "です。",
        "x" * 60,
        "長い文章" * 20,
        "LoRa",
        "🦌",
    ]
    seps = [" ", " ", "\n", "\n\n", "", "  \n \n", "\t"]
    for _ in range(300):
        text = "".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 60)))
        assert_lossless(text, split_text(text, max_chars), max_chars)
        pieces = split_pieces(text, max_chars)
        assert [p for _, p in pieces] == split_text(text, max_chars)
        starts = [start for start, _ in pieces]
        assert starts == sorted(set(starts))
        for start, piece in pieces:  # each piece's first paragraph or sentence is there
            assert text.startswith(piece.split("\n\n")[0], start), (text, start, piece)


def test_chunk_sections_keeps_metadata_and_numbers_chunks() -> None:
    sections = [
        Section("A", "short", page=None, line=1, text_line=2),
        Section("A > B", "one sentence here. " * 10, line=5, date="2024-01-02", text_line=6),
        Section("", "page text", page=3),
    ]
    chunks = chunk_sections(sections, max_chars=60)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert chunks[0] == Chunk(index=0, section="A", text="short", page=None, line=2, date=None)
    middle = [c for c in chunks if c.section == "A > B"]
    assert len(middle) > 1
    assert all(c.line == 6 and c.date == "2024-01-02" and c.page is None for c in middle)
    assert squash("".join(c.text for c in middle)) == squash(sections[1].text)
    assert chunks[-1] == Chunk(index=len(chunks) - 1, section="", text="page text", page=3)


def test_each_chunk_starts_on_the_line_of_its_first_words() -> None:
    """A long section's pieces each start on their own line of the file, counted from the
    line the section's text begins on (blank lines above and between still count); a
    section whose text is not the file's (a PDF page) gives none."""
    paragraphs = [f"Paragraph {i} " + "word " * 30 for i in range(6)]
    japanese = "".join(f"第{i}文です。\n" for i in range(40))  # one paragraph, a line each
    text = "\n\n" + "\n\n\n".join(p.strip() for p in paragraphs) + "\n\n" + japanese
    file = "# Title\n" + text
    chunks = chunk_sections([Section("Title", text, line=1, text_line=2)], max_chars=200)
    assert len(chunks) >= 8
    lines = file.split("\n")
    for chunk in chunks:
        first = chunk.text.split("\n")[0]
        assert chunk.line is not None and lines[chunk.line - 1].startswith(first), chunk
    assert [c.line for c in chunk_sections([Section("", text, page=2)], max_chars=200)] == [
        None
    ] * len(chunks)


def test_chunk_sections_drops_blank_sections() -> None:
    chunks = chunk_sections([Section("A", "   "), Section("B", "text")])
    assert [(c.index, c.section) for c in chunks] == [(0, "B")]


def test_chunk_sections_default_limit_is_1000() -> None:
    text = "word " * 400  # 2000 chars, one paragraph, no sentence ends
    chunks = chunk_sections([Section("", text)])
    assert len(chunks) >= 2
    assert all(len(c.text) <= 1000 for c in chunks)
