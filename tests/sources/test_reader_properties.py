"""Property-based: whatever bytes a note, a text file or a PDF's metadata hold, the readers
return a Document or raise the documented SkipFile, nothing else; what they return is
bounded by the input and storable (valid Unicode, no NUL in a PDF title)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pypdf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pypdf.generic import ByteStringObject, NameObject, TextStringObject

from tsm.models import Document
from tsm.sources import SkipFile, markdown, pdf, text
from tsm.sources.markdown import split_frontmatter

SAMPLE_PDF = Path(__file__).resolve().parents[2] / "examples/vault/research/git-admin-guide.pdf"
EXAMPLES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# Markdown's own characters, weighted in, so the syntax paths are walked, not just prose.
def tokens(*pieces: str, max_size: int = 120) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=max_size).map("".join)


MARKUP = tokens(
    *"[]()<>!#*_`~|-:\"'&{}\\/ \t\n\r",
    "a",
    "b",
    "1",
    "狩",
    "猟",
    "é",
    "\u3000",
    "\x00",
    "---\n",
    "```",
    "[[",
    "]]",
    "](",
    "# ",
    "#tag",
    "&a",
    "*a",
    "http:",
)
ANY_TEXT = st.text(max_size=300)


def check(doc: Document, source: bytes) -> None:
    """What a reader returns can be stored and is no larger than what it read."""
    for value in (
        doc.path,
        doc.title,
        doc.text,
        *doc.tags,
        *doc.aliases,
        *(s.heading for s in doc.sections),
        *(s.text for s in doc.sections),
        *(link.target for link in doc.links),
    ):
        assert isinstance(value, str)
        value.encode("utf-8")  # no lone surrogate reaches SQLite
    assert len(doc.text.encode()) <= len(source) + 3
    assert sum(len(s.text) for s in doc.sections) <= len(doc.text)


def read_or_skip(reader, data: bytes, name: str) -> None:  # type: ignore[no-untyped-def]
    try:
        doc = reader(Path(name), name, data)
    except SkipFile as skip:
        assert str(skip)
        return
    check(doc, data)


@EXAMPLES
@given(st.binary(max_size=400) | MARKUP.map(str.encode) | ANY_TEXT.map(str.encode))
def test_markdown_reader_returns_a_document_or_skips(data: bytes) -> None:
    read_or_skip(markdown.read, data, "notes/n.md")


YAMLISH = tokens(
    *"&*!|>[]{}:,-?%@`'\"# \n\tab1",
    "tags",
    "title",
    "created",
    "2024-13-45",
    "<<",
    "!!binary",
    "!!python/object",
    "~",
    "null",
    "aliases",
    "\ufeff",
    ": ",
    "\n- ",
    "&a ",
    "*a",
)


@EXAMPLES
@given(YAMLISH, MARKUP)
def test_frontmatter_any_yaml(front: str, body: str) -> None:
    source = f"---\n{front}\n---\n{body}"
    meta, rest, line = split_frontmatter(source)
    assert isinstance(meta, dict) and line >= 1 and len(rest) <= len(source)
    read_or_skip(markdown.read, source.encode(), "notes/n.md")


@EXAMPLES
@given(st.binary(max_size=400) | ANY_TEXT.map(str.encode))
def test_text_reader_returns_a_document_or_skips(data: bytes) -> None:
    read_or_skip(text.read, data, "notes/n.txt")


_TEMPLATE = SAMPLE_PDF.read_bytes()
META_VALUE = st.text(max_size=60).map(
    lambda t: TextStringObject(t.encode("utf-8", "replace").decode())
) | st.binary(max_size=60).map(ByteStringObject)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(META_VALUE, META_VALUE)
@example(TextStringObject("a\x00b\nc"), ByteStringObject(b"\xfe\xff\xd8\x00"))
def test_pdf_metadata_any_title(title: object, author: object) -> None:
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(_TEMPLATE))
    info = writer._info.get_object()  # the document information dictionary
    info[NameObject("/Title")] = title
    info[NameObject("/Author")] = author
    out = io.BytesIO()
    writer.write(out)
    data = out.getvalue()
    doc = pdf.read(Path("r/x.pdf"), "r/x.pdf", data)
    check(doc, data)
    assert doc.title and "\x00" not in doc.title and "\n" not in doc.title


GARBAGE_PDF = st.binary(max_size=400).map(lambda b: b"%PDF-1.4\n" + b)


@EXAMPLES
@given(GARBAGE_PDF)
def test_pdf_parsing_on_garbage_answers_pages_or_a_reason(data: bytes) -> None:
    """The reader's child process runs `extract` and writes its answer as JSON: here in this
    process, so that many inputs fit the suite's time (a child each takes a Python start)."""
    answer = pdf.extract(data, pdf.MAX_TEXT_CHARS)
    assert set(answer) in ({"skip"}, {"pages", "title"})
    assert json.loads(json.dumps(answer)) is not None


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GARBAGE_PDF)
def test_pdf_reader_on_garbage_skips(data: bytes) -> None:
    read_or_skip(pdf.read, data, "r/x.pdf")


def test_pdf_text_is_capped() -> None:
    """Compressed streams can expand far past the file's size: the text has its own cap."""
    doc = pdf.read(SAMPLE_PDF, "r/x.pdf", _TEMPLATE)
    assert len(doc.text) > 100
    try:
        pdf.read(SAMPLE_PDF, "r/x.pdf", _TEMPLATE, max_chars=100)
    except SkipFile as skip:
        assert str(skip).startswith("PDF text longer than 100 characters")
    else:
        raise AssertionError("the cap was not applied")
