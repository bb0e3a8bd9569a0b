"""Plain-text files: one section, split into chunks later on paragraph boundaries."""

from __future__ import annotations

from pathlib import Path

from ..models import Document, Section
from .base import decode_text


def read(path: Path, rel: str, data: bytes) -> Document:
    text = decode_text(data)
    return Document(
        path=rel,
        type="text",
        title=path.stem,
        text=text,
        sections=(Section(heading="", text=text, line=1, text_line=1),),
    )
