"""PDF files: text per page, the page number kept on each section (pypdf, imported lazily)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from ..models import Document, Section
from . import SkipFile


def read(path: Path, rel: str, data: bytes) -> Document:
    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed PDFs are noisy, not fatal
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # Many PDFs are encrypted with an owner password only: they open with an empty one.
        if reader.is_encrypted and not reader.decrypt(""):
            raise SkipFile("encrypted PDF")
        pages = [(n, page.extract_text() or "") for n, page in enumerate(reader.pages, start=1)]
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
    title = str(meta_title).strip() if meta_title and str(meta_title).strip() else path.stem
    return Document(path=rel, type="pdf", title=title,
                    text="\n\n".join(s.text for s in sections), sections=sections)


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\x00", "").splitlines()).strip()
