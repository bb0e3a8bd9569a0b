"""The Markdown reader on hostile input: shapes that made the old patterns
backtrack quadratically are read, and read right; frontmatter alias bombs, deep nesting and
oversized blocks cost their metadata, never the process. Speed is measured in
bench/markdown_adversarial.py; here a 100 KB line of `[` (minutes with the old patterns)
simply has to come back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsm.models import Document
from tsm.sources.markdown import FRONTMATTER_MAX_CHARS, read, split_frontmatter

SIZE = 100_000


def read_md(text: str) -> Document:
    return read(Path("notes/n.md"), "notes/n.md", text.encode())


@pytest.mark.parametrize(
    "line",
    [
        "[" * SIZE,
        "[[" * (SIZE // 2),
        "[[a|" * (SIZE // 4),
        "[](" * (SIZE // 3),
        '[a](b "' * (SIZE // 7),
        "[a](<" * (SIZE // 5),
        "`a" * (SIZE // 2),
        "# x" + " " * SIZE + "y",
        " #" + "1" * SIZE,
        "<" * SIZE,
        "*" * SIZE,
    ],
    ids=[
        "brackets",
        "wikilinks",
        "wikipipes",
        "link-openers",
        "link-titles",
        "angle-targets",
        "code-spans",
        "heading-spaces",
        "tag-digits",
        "angles",
        "stars",
    ],
)
def test_adversarial_lines_are_read(line: str) -> None:
    doc = read_md("# Title\n\n" + line + "\n\nafter [[real-link]] #real-tag\n")
    assert doc.title == "Title"
    assert "real-tag" in doc.tags
    assert [link.target for link in doc.links if link.link_type == "wikilink"][-1] == "real-link"


def test_code_spans_pair_runs_of_equal_length() -> None:
    doc = read_md("x `#no` ``a ` #no2`` #yes ``` #open-run-is-literal\n")
    assert doc.tags == ("yes", "open-run-is-literal")


def test_heading_closing_sequence() -> None:
    doc = read_md("# Title ##\nx\n## C#\ny\n## #\nz\n### Mid # hash ###\nw\n")
    assert [s.heading for s in doc.sections] == [
        "Title",
        "Title > C#",
        "Title > ",
        "Title >  > Mid # hash",
    ]


def test_links_with_titles_and_angle_targets() -> None:
    doc = read_md("[a](one.md \"t\") [b](<two words.md>) [c](three.md 't') ![img](i.png)\n")
    assert [link.target for link in doc.links] == ["one.md", "two words.md", "three.md"]


def alias_bomb() -> str:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines)


@pytest.mark.parametrize(
    "yaml_text",
    [
        alias_bomb() + "\ntags: {k: *i}",  # a mapping is turned into one string: 9^9 items
        alias_bomb() + "\ntags: *i",
        "title: &t T\naliases: *t",
        "a: " + "[" * 5000 + "]" * 5000,  # libyaml's loader recursed on the C stack: a crash
        "a: " + "{b: " * 2000 + "1" + "}" * 2000,
    ],
)
def test_frontmatter_refuses_aliases_and_deep_nesting(yaml_text: str) -> None:
    doc = read_md(f"---\n{yaml_text}\n---\n# Heading\n\nbody\n")
    assert doc.title == "Heading" and doc.tags == () and doc.aliases == ()
    assert "body" in doc.sections[0].text


def test_anchors_without_aliases_and_shallow_nesting_are_fine() -> None:
    meta, _, _ = split_frontmatter("---\ntitle: &t Kept\ntags: [[a, b], c]\n---\nx")
    assert meta == {"title": "Kept", "tags": [["a", "b"], "c"]}


def test_oversized_frontmatter_is_ignored() -> None:
    big = "---\ntitle: Big\nnote: " + "x" * FRONTMATTER_MAX_CHARS + "\n---\n# H\nbody\n"
    meta, body, line = split_frontmatter(big)
    assert meta == {} and body == "# H\nbody\n" and line == 5
    assert read_md(big).title == "H"
