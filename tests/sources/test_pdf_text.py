"""PDF reader (text per page, page numbers kept, damaged files skipped) and plain-text reader."""

from __future__ import annotations

import io
from pathlib import Path

import pypdf
import pytest

from tsm.sources import READERS, SkipFile, pdf, reader_for, text

SAMPLE_PDF = Path(__file__).resolve().parents[2] / "examples/vault/research/git-admin-guide.pdf"


def pdf_bytes(*, blank_pages: int = 0, encrypt_user: str | None = None) -> bytes:
    """The sample PDF (or blank pages), optionally encrypted with RC4 (no extra dependency)."""
    writer = pypdf.PdfWriter() if blank_pages else pypdf.PdfWriter(clone_from=SAMPLE_PDF)
    for _ in range(blank_pages):
        writer.add_blank_page(200, 200)
    if encrypt_user is not None:
        writer.encrypt(user_password=encrypt_user, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- PDF -------------------------------------------------------------------------------------


def test_sample_pdf_keeps_pages() -> None:
    doc = pdf.read(SAMPLE_PDF, "research/git-admin-guide.pdf", SAMPLE_PDF.read_bytes())
    assert doc.type == "pdf"
    assert doc.path == "research/git-admin-guide.pdf"
    assert doc.title == "Git Admin Guide"  # from the PDF metadata
    assert [s.page for s in doc.sections] == [1, 2]
    assert all(s.heading == "" for s in doc.sections)
    assert "Chapter 1: Installation" in doc.sections[0].text
    assert "download the release tarball" in doc.sections[0].text
    assert "Chapter 2: Backups" in doc.sections[1].text
    assert "git clone --mirror" in doc.sections[1].text
    assert "Backups" not in doc.sections[0].text


def test_sample_pdf_text_is_all_pages() -> None:
    doc = pdf.read(SAMPLE_PDF, "g.pdf", SAMPLE_PDF.read_bytes())
    assert doc.text == "\n\n".join(s.text for s in doc.sections)
    assert all(s.text == s.text.strip() and "\x00" not in s.text for s in doc.sections)


def test_pdf_without_title_metadata_uses_stem() -> None:
    writer = pypdf.PdfWriter(clone_from=SAMPLE_PDF)
    writer.add_metadata({"/Title": "  "})
    out = io.BytesIO()
    writer.write(out)
    doc = pdf.read(Path("research/manual.pdf"), "research/manual.pdf", out.getvalue())
    assert doc.title == "manual"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not a pdf at all",
        b"%PDF-1.4\ngarbage\n%%EOF",
        SAMPLE_PDF.read_bytes()[:300],  # truncated download
    ],
    ids=["empty", "not-pdf", "garbage", "truncated"],
)
def test_corrupt_pdf_is_skipped(data: bytes) -> None:
    with pytest.raises(SkipFile) as info:
        pdf.read(Path("bad.pdf"), "bad.pdf", data)
    assert "PDF" in str(info.value)
    assert not info.value.transient


def test_pdf_without_text_is_skipped() -> None:
    with pytest.raises(SkipFile, match="no extractable text"):
        pdf.read(Path("scan.pdf"), "scan.pdf", pdf_bytes(blank_pages=2))


def test_password_protected_pdf_is_skipped() -> None:
    with pytest.raises(SkipFile, match="encrypted"):
        pdf.read(Path("secret.pdf"), "secret.pdf", pdf_bytes(encrypt_user="secret"))


def test_pdf_with_empty_user_password_is_read() -> None:
    doc = pdf.read(Path("restricted.pdf"), "restricted.pdf", pdf_bytes(encrypt_user=""))
    assert [s.page for s in doc.sections] == [1, 2]


def test_pdf_reader_is_registered() -> None:
    assert reader_for(Path("X.PDF")) is READERS[".pdf"]


# --- plain text ------------------------------------------------------------------------------


def test_text_file_is_one_section() -> None:
    doc = text.read(Path("notes/todo.txt"), "notes/todo.txt", "first line\r\n\r\n狩猟\r\n".encode())
    assert doc.type == "text"
    assert doc.path == "notes/todo.txt"
    assert doc.title == "todo"
    assert doc.text == "first line\n\n狩猟\n"
    assert [(s.heading, s.text, s.line, s.page) for s in doc.sections] == [
        ("", "first line\n\n狩猟\n", 1, None)
    ]
    assert doc.tags == () and doc.links == ()


def test_text_file_keeps_markdown_syntax_as_text() -> None:
    doc = text.read(Path("a.txt"), "a.txt", b"# not a heading #not-a-tag [[x]]\n")
    assert doc.sections[0].heading == ""
    assert doc.tags == () and doc.links == ()


def test_text_file_with_bom() -> None:
    doc = text.read(Path("a.txt"), "a.txt", b"\xef\xbb\xbfhello")
    assert doc.text == "hello"


@pytest.mark.parametrize(
    "data",
    [b"", b" \n ", b"\x00\x01\x02binary", "日本語".encode("euc_jp")],
    ids=["empty", "blank", "binary", "euc-jp"],
)
def test_unreadable_text_file_is_skipped(data: bytes) -> None:
    with pytest.raises(SkipFile):
        text.read(Path("a.txt"), "a.txt", data)


@pytest.mark.parametrize("suffix", [".txt", ".text", ".TXT"])
def test_text_reader_is_registered(suffix: str) -> None:
    reader = reader_for(Path(f"a{suffix}"))
    assert reader is not None
    assert reader(Path(f"a{suffix}"), f"a{suffix}", b"hi").type == "text"
