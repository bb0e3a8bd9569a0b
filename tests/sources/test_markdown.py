"""Markdown reader: frontmatter, inline #tags, heading tree, code fences, links, title fallback,
and the byte-level checks shared by every text reader (decode_text, load_bytes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tsm.models import Document, Link
from tsm.sources import MAX_FILE_BYTES, SkipFile, decode_text, load_bytes
from tsm.sources.markdown import read, split_frontmatter


def read_md(text: str | bytes, name: str = "notes/note.md") -> Document:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return read(Path(name), name, data)


def headings(doc: Document) -> list[str]:
    return [s.heading for s in doc.sections]


def targets(doc: Document, link_type: str) -> list[str]:
    return [link.target for link in doc.links if link.link_type == link_type]


# --- frontmatter ---------------------------------------------------------------------------


FULL_FRONTMATTER = """\
---
title: Hunting licence
tags: [Hunting, 狩猟]
status: Draft
created: 2024-01-02
updated: 2024-03-04
aliases: [licence, 免許]
---
# Ignored H1
Body text.
"""


def test_frontmatter_fields() -> None:
    doc = read_md(FULL_FRONTMATTER)
    assert doc.type == "markdown"
    assert doc.path == "notes/note.md"
    assert doc.title == "Hunting licence"
    assert doc.tags == ("hunting", "狩猟")  # lower-cased, order kept
    assert doc.status == "draft"
    assert doc.created == "2024-01-02"
    assert doc.updated == "2024-03-04"
    assert doc.aliases == ("licence", "免許")
    assert doc.date == "2024-03-04"
    assert doc.date_source == "frontmatter:updated"


def test_frontmatter_is_not_body_text() -> None:
    doc = read_md(FULL_FRONTMATTER)
    assert [(s.heading, s.text) for s in doc.sections] == [("Ignored H1", "Body text.")]
    assert doc.sections[0].line == 9  # line numbers count the frontmatter lines


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[a, b]", ("a", "b")),
        ("a, b", ("a", "b")),
        ("a b", ("a", "b")),
        ("'#a, #b'", ("a", "b")),
        ("\n  - a\n  - b", ("a", "b")),
        ("solo", ("solo",)),
        ("[2024, x]", ("2024", "x")),
        ("[A, a, B]", ("a", "b")),  # duplicates differing only in case collapse
        ("", ()),
    ],
)
def test_frontmatter_tags_as_list_or_string(value: str, expected: tuple[str, ...]) -> None:
    doc = read_md(f"---\ntags: {value}\n---\nbody\n")
    assert doc.tags == expected


def test_frontmatter_singular_tag_key() -> None:
    assert read_md("---\ntag: solo\n---\nbody\n").tags == ("solo",)


def test_frontmatter_and_inline_tags_merge_without_duplicates() -> None:
    doc = read_md("---\ntags: [Foo]\n---\nText #foo #FOO #bar\n")
    assert doc.tags == ("foo", "bar")


@pytest.mark.parametrize(
    ("frontmatter", "created", "updated", "date", "source"),
    [
        ("created: 2024-01-02", "2024-01-02", None, "2024-01-02", "frontmatter:created"),
        ("created: '2024-01-02'", "2024-01-02", None, "2024-01-02", "frontmatter:created"),
        ("updated: 2024-01-02 10:11:12", None, "2024-01-02", "2024-01-02", "frontmatter:updated"),
        ("updated: '2024/3/4 09:00'", None, "2024-03-04", "2024-03-04", "frontmatter:updated"),
        ("date: 2023-07-01", "2023-07-01", None, "2023-07-01", "frontmatter:date"),
        ("date: 2023.07.01", "2023-07-01", None, "2023-07-01", "frontmatter:date"),
        (
            "created: 2020-01-01\ndate: 2023-07-01",
            "2020-01-01",
            None,
            "2023-07-01",
            "frontmatter:date",
        ),
        ("created: not a date", None, None, None, None),
        ("created: '2024-02-30'", None, None, None, None),
    ],
)
def test_frontmatter_dates(
    frontmatter: str, created: str | None, updated: str | None, date: str | None, source: str | None
) -> None:
    doc = read_md(f"---\n{frontmatter}\n---\nbody\n")
    assert (doc.created, doc.updated, doc.date, doc.date_source) == (created, updated, date, source)


@pytest.mark.parametrize("value", ["2024-13-45", "2024-02-30"])
def test_impossible_yaml_date_does_not_crash(value: str) -> None:
    doc = read_md(f"---\ntitle: Kept?\ncreated: {value}\n---\n# H\nbody text\n")
    assert doc.created is None
    assert [s.text for s in doc.sections] == ["body text"]


def test_status_is_lower_cased_and_scalar_only() -> None:
    assert read_md("---\nstatus: Superseded\n---\nx\n").status == "superseded"
    assert read_md("---\nstatus: [a, b]\n---\nx\n").status is None
    assert read_md("x\n").status is None


def test_aliases_list() -> None:
    assert read_md("---\naliases: [My Note, 別名]\n---\nx\n").aliases == ("My Note", "別名")
    assert read_md("---\nalias: one\n---\nx\n").aliases == ("one",)


def test_alias_string_with_spaces_is_one_alias() -> None:
    assert read_md("---\naliases: My Note\n---\nx\n").aliases == ("My Note",)


@pytest.mark.parametrize(
    "text",
    [
        "---\ntitle: [unclosed\n---\n# Heading\nbody text #tag\n",
        "---\ntitle: 'unterminated\n---\n# Heading\nbody text #tag\n",
        "---\n: : :\n  - x\n bad: [\n---\n# Heading\nbody text #tag\n",
        "---\n\tkey: tab\n---\n# Heading\nbody text #tag\n",
    ],
)
def test_broken_yaml_keeps_body(text: str) -> None:
    doc = read_md(text)
    assert doc.title == "Heading"
    assert doc.tags == ("tag",)
    assert [(s.heading, s.text) for s in doc.sections] == [("Heading", "body text #tag")]


def test_non_mapping_frontmatter_is_ignored() -> None:
    doc = read_md("---\n- a\n- b\n---\nbody\n")
    assert doc.title == "note"
    assert [s.text for s in doc.sections] == ["body"]


def test_empty_frontmatter_and_dots_terminator() -> None:
    assert [s.text for s in read_md("---\n---\nbody\n").sections] == ["body"]
    assert read_md("---\ntitle: Dots\n...\nbody\n").title == "Dots"


def test_unclosed_frontmatter_is_body() -> None:
    meta, body, line = split_frontmatter("---\ntitle: X\n\n# H\nbody")
    assert (meta, line) == ({}, 1)
    assert body.startswith("---\ntitle: X")


def test_frontmatter_only_file_is_one_section_of_its_title() -> None:
    doc = read_md("---\ntitle: Only metadata\n---\n")
    assert doc.title == "Only metadata"
    assert [(s.heading, s.text) for s in doc.sections] == [("", "Only metadata")]
    assert read_md("---\ntags: [a]\n---\n").sections == ()  # no title: nothing to find


# --- inline tags -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("about #狩猟 today", ("狩猟",)),
        ("#狩猟 at line start", ("狩猟",)),
        ("nested #a/b and #狩猟/免許", ("a/b", "狩猟/免許")),
        ("trailing punctuation #last.", ("last",)),
        ("trailing slash #dir/ and dash #x-", ("dir", "x")),
        ("dash inside #tag-with-dash", ("tag-with-dash",)),
        ("pure numbers #1 and #2024 are not tags", ()),
        ("a digit first #1st is", ("1st",)),
        ("URL https://example.com/page#anchor is not", ()),
        ("word#inside is not", ()),
        ("parenthesised (#x) is not", ()),
        ("inline code `#code` is not", ()),
        ("inline code `see #a and #b` is not, #c is", ("c",)),
    ],
)
def test_inline_tags(line: str, expected: tuple[str, ...]) -> None:
    assert read_md(f"{line}\n").tags == expected


def test_no_tags_in_double_backtick_code() -> None:
    assert read_md("text ``#t4`` more\n").tags == ()


def test_headings_are_not_tags() -> None:
    doc = read_md("# Heading\n## Sub #notatag\n### #alsonot\nbody\n")
    assert doc.tags == ()
    assert headings(doc) == ["Heading > Sub #notatag > #alsonot"]


def test_hashtag_without_space_is_a_tag_not_a_heading() -> None:
    doc = read_md("#hashtag\n# Real heading\nbody\n")
    assert doc.tags == ("hashtag",)
    assert doc.title == "Real heading"
    assert headings(doc) == ["", "Real heading"]


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_no_tags_headings_or_links_inside_code_fences(fence: str) -> None:
    text = (
        "Intro #real\n"
        f"{fence}python\n"
        "# not a heading\n"
        "#not_a_tag [[not-a-link]] [x](not-a-link.md)\n"
        f"{fence}\n"
        "After [[yes]]\n"
    )
    doc = read_md(text)
    assert doc.tags == ("real",)
    assert headings(doc) == [""]
    assert "# not a heading" in doc.sections[0].text
    assert targets(doc, "wikilink") == ["yes"]
    assert targets(doc, "markdown") == []


def test_fence_closes_only_with_same_marker_and_length() -> None:
    doc = read_md("````\n```\n# inside\n```\n````\n# Real\nx\n~~~\n```\n# still code\n~~~\n")
    assert headings(doc) == ["", "Real"]
    assert doc.title == "Real"
    assert "# still code" in doc.sections[1].text


def test_unclosed_fence_swallows_the_rest() -> None:
    doc = read_md("# Top\n```\n# not a heading\n#nottag\n")
    assert headings(doc) == ["Top"]
    assert doc.tags == ()


# --- headings and sections --------------------------------------------------------------------


def test_heading_tree_becomes_section_paths() -> None:
    doc = read_md("intro\n# A\na\n## B\nb\n### C\nc\n## D\nd\n# E\ne\n#### F\nf\n")
    assert [(s.heading, s.text, s.line) for s in doc.sections] == [
        ("", "intro", 1),
        ("A", "a", 2),
        ("A > B", "b", 4),
        ("A > B > C", "c", 6),
        ("A > D", "d", 8),
        ("E", "e", 10),
        ("E > F", "f", 12),
    ]


def test_each_section_says_the_line_its_text_begins_on() -> None:
    """`text_line` is where the section's text begins in the file, under frontmatter, past
    blank lines and HTML comments; a note of headings alone is found on their lines."""
    note = (
        "---\ntitle: T\ntags: [a]\n---\nintro\n# A\n\n\n<!-- a\ncomment -->\n\nfirst words\n"
        "more\n## B\n```\n# not a heading\n```\n## C\n\n  indented start\n"
    )
    doc = read_md(note)
    lines = note.split("\n")
    assert [(s.heading, s.line, s.text_line) for s in doc.sections] == [
        ("", 5, 5),
        ("A", 6, 12),
        ("A > B", 14, 15),
        ("A > C", 18, 20),
    ]
    for section in doc.sections:
        assert section.text_line is not None
        assert lines[section.text_line - 1].strip() == section.text.split("\n")[0].strip()
    only_headings = read_md("---\ntitle: T\n---\n# One\n\n## Two\n")
    assert [(s.heading, s.text_line) for s in only_headings.sections] == [
        ("One", 4),
        ("One > Two", 6),
    ]


def test_heading_markup_is_stripped() -> None:
    doc = read_md("# [[Link]] *em* `code` ##\ntext\n## Closing hashes ###\nmore\n")
    assert headings(doc) == ["Link em code", "Link em code > Closing hashes"]


def test_heading_syntax_edges() -> None:
    doc = read_md("#\tTab heading\n####### seven is text\n    # indented is code\nbody\n")
    assert headings(doc) == ["Tab heading"]
    assert "####### seven is text" in doc.sections[0].text
    assert "# indented is code" in doc.sections[0].text


def test_empty_sections_are_dropped() -> None:
    doc = read_md("# A\n\n## B\n\n   \n## C\ntext\n")
    assert headings(doc) == ["A > C"]


# --- links -----------------------------------------------------------------------------------


LINKS = """\
[[plain]] [[target|alias text]] [[page#Some heading]] ![[embed.png]] [[folder/deep note]]
[rel](other/note.md) [up](../up.md) [titled](titled.md "Title") [sec](with-sec.md#part)
[enc](my%20note.md) [angle](<angle.md>)
[web](https://example.com/x.md) [plain http](http://example.com) [mail](mailto:a@b.c)
[anchor](#local-heading) [ftp](ftp://host/file) ![image](picture.png)
`[[inline code]]` and `[c](code.md)`
"""


def test_wikilinks() -> None:
    doc = read_md(LINKS)
    assert targets(doc, "wikilink") == [
        "plain",
        "target",
        "page",
        "embed.png",
        "folder/deep note",
    ]


def test_relative_markdown_links() -> None:
    doc = read_md(LINKS)
    assert targets(doc, "markdown") == [
        "other/note.md",
        "../up.md",
        "titled.md",
        "with-sec.md",
        "my note.md",
        "angle.md",
    ]


def test_angle_bracket_link_with_spaces() -> None:
    assert targets(read_md("[x](<my note.md>)\n"), "markdown") == ["my note.md"]


def test_links_are_link_objects() -> None:
    doc = read_md("[[x]] [y](y.md)\n")
    assert doc.links == (Link("x", "wikilink"), Link("y.md", "markdown"))


def test_wikilink_in_heading_is_not_a_link_but_its_text_stays() -> None:
    doc = read_md("# About [[Other]]\nbody\n")
    assert doc.links == ()
    assert doc.title == "About Other"


# --- title fallback --------------------------------------------------------------------------


def test_title_from_frontmatter_first() -> None:
    doc = read_md("---\ntitle: From YAML\n---\n# From H1\nx\n")
    assert doc.title == "From YAML"


def test_title_from_first_h1_not_h2() -> None:
    doc = read_md("## Subtitle\nx\n# First H1\ny\n# Second H1\nz\n")
    assert doc.title == "First H1"


def test_title_falls_back_to_file_stem() -> None:
    assert read_md("## Only H2\nx\n", name="daily/2024-05-06.md").title == "2024-05-06"
    assert read_md("plain text\n", name="メモ.md").title == "メモ"


@pytest.mark.parametrize("frontmatter", ["title: ''", "title:", "title: {a: 1}", "title: [a]"])
def test_empty_or_non_scalar_title_falls_back(frontmatter: str) -> None:
    assert read_md(f"---\n{frontmatter}\n---\n# H1 title\nx\n").title == "H1 title"


def test_numeric_title_is_text() -> None:
    assert read_md("---\ntitle: 2024\n---\nx\n").title == "2024"


# --- encodings and line endings --------------------------------------------------------------


def test_crlf_file() -> None:
    text = (
        "---\r\ntitle: CR\r\ntags: [a]\r\n---\r\n# A\r\n\r\ntext #b\r\n"
        "```\r\n# no\r\n```\r\n## B\r\nmore\r\n"
    )
    doc = read_md(text)
    assert doc.title == "CR"
    assert doc.tags == ("a", "b")
    assert [(s.heading, s.line) for s in doc.sections] == [("A", 5), ("A > B", 11)]
    assert "\r" not in doc.text
    assert all("\r" not in s.text for s in doc.sections)


def test_old_mac_line_endings() -> None:
    doc = read_md("# A\rtext\r## B\rmore\r")
    assert headings(doc) == ["A", "A > B"]


def test_utf8_bom_before_frontmatter() -> None:
    doc = read_md(b"\xef\xbb\xbf---\ntitle: BOM\n---\n# H\nx\n")
    assert doc.title == "BOM"
    assert not doc.text.startswith("\ufeff")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   \n\t\n",
        b"\xef\xbb\xbf",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"text\x00with a NUL",
        "狩猟免許".encode("shift_jis"),
        "café".encode("latin-1"),
        "# Title\n".encode("utf-16"),
    ],
    ids=["empty", "whitespace", "bom-only", "png", "nul", "shift-jis", "latin-1", "utf-16"],
)
def test_unreadable_content_is_skipped(data: bytes) -> None:
    with pytest.raises(SkipFile) as info:
        read_md(data)
    assert not info.value.transient


def test_decode_text_normalises_newlines_and_bom() -> None:
    assert decode_text(b"\xef\xbb\xbfa\r\nb\rc\n") == "a\nb\nc\n"
    assert decode_text("狩猟".encode()) == "狩猟"


def test_decode_text_drops_a_nul_past_the_binary_check() -> None:
    """A NUL deep in a text file means nothing, and PostgreSQL text cannot hold it: the
    same text goes into either store."""
    text = decode_text(b"a" * 9000 + b"\x00b")
    assert "\x00" not in text and text.endswith("ab")


def test_load_bytes(tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_bytes(b"# hi\n")
    assert load_bytes(note) == b"# hi\n"


def test_load_bytes_missing_file_is_transient(tmp_path: Path) -> None:
    with pytest.raises(SkipFile) as info:
        load_bytes(tmp_path / "gone.md")
    assert info.value.transient


def test_load_bytes_refuses_huge_files(tmp_path: Path) -> None:
    huge = tmp_path / "huge.md"
    with huge.open("wb") as fh:  # sparse: no 10 MB written to disk
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(SkipFile) as info:
        load_bytes(huge)
    assert not info.value.transient
    assert "MB" in str(info.value)


def test_example_vault_notes_parse() -> None:
    vault = Path(__file__).resolve().parents[2] / "examples" / "vault"
    notes = sorted(vault.rglob("*.md"))
    assert notes
    for note in notes:
        rel = note.relative_to(vault).as_posix()
        doc = read(note, rel, note.read_bytes())
        assert doc.title and doc.sections, rel


# --- notes without body text ---------------------------------------------------------------


def test_a_note_of_headings_or_frontmatter_alone_is_found_by_its_words(
    tsm: Any, vault: Path
) -> None:
    """A quick note that is one heading (or a few), or frontmatter with a title and nothing
    under it, gave no section and so no chunk: indexed, yet no search could find it."""
    notes = {
        "inbox/dentist.md": "# 歯医者の予約 Zephyrdent 11/30\n",
        "inbox/plan.md": "# Plan Quillmoor\n\n## Later\n",
        "inbox/front.md": "---\ntitle: Marigoldfen reading list\ntags: [books]\n---\n",
    }
    for rel, text in notes.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    for rel, word in (
        ("inbox/dentist.md", "Zephyrdent"),
        ("inbox/dentist.md", "歯医者"),
        ("inbox/plan.md", "Quillmoor"),
        ("inbox/front.md", "Marigoldfen"),
    ):
        found = tsm("search", word, "--fts-only", "-f", "json")
        assert found.code == 0, found.err
        assert [r["source"]["path"] for r in found.json()["results"]][:1] == [rel], word
    info = tsm("info", "inbox/dentist.md", "-f", "json").json()
    assert info["chunk_count"] == 1 and info["sections"] == ["歯医者の予約 Zephyrdent 11/30"]
