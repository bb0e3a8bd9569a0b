"""PDF files: text per page, the page number kept on each section (pypdf, imported lazily)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from ..models import Document, Section
from .base import SkipFile

# Compressed streams make a PDF's text far larger than its bytes (pypdf caps each stream at
# 75 MB, not their sum); 20 million characters is a 10,000-page book.
MAX_TEXT_CHARS = 20_000_000


def read(path: Path, rel: str, data: bytes, max_chars: int = MAX_TEXT_CHARS) -> Document:
    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed PDFs are noisy, not fatal
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # Many PDFs are encrypted with an owner password only: they open with an empty one.
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF")
        pages, total = [], 0
        for n, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            total += len(text)
            if total > max_chars:
                raise SkipFile(f"PDF text longer than {max_chars:,} characters (page {n})")
            pages.append((n, text))
        meta_title = reader.metadata.get("/Title") if reader.metadata else None
    except SkipFile:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files
        raise SkipFile(f"unreadable PDF: {exc}") from None
    sections = tuple(
        Section(heading="", text=_clean(text), page=n) for n, text in pages if text.strip()
    )
    if not sections:
        raise SkipFile("PDF has no extractable text (scanned?)")
    title = _clean(str(meta_title)) if meta_title else ""
    title = " ".join(title.split()) or path.stem
    return Document(
        path=rel,
        type="pdf",
        title=title,
        text="\n\n".join(s.text for s in sections),
        sections=sections,
    )


def _clean(text: str) -> str:
    """Text as the index can store it: no NULs, no lone surrogates (a broken ToUnicode map can
    produce them, and SQLite cannot encode them), no trailing blanks."""
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return "\n".join(line.rstrip() for line in text.splitlines()).strip()
