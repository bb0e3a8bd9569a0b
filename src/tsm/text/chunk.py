"""Heading-first chunking: each section becomes one chunk, and a section longer than
`max_chars` is split on paragraph, then sentence boundaries (never inside a character)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..models import Chunk, Section

_PARAGRAPH = re.compile(r"\n[ \t]*\n+")
# After Japanese full stops always; after . ! ? only when whitespace follows (not "v1.2").
_SENTENCE = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+")


def chunk_sections(sections: Iterable[Section], max_chars: int = 1000) -> list[Chunk]:
    """Split sections into chunks of at most `max_chars` characters, keeping section metadata."""
    chunks: list[Chunk] = []
    for section in sections:
        for piece in split_text(section.text, max_chars):
            chunks.append(
                Chunk(
                    index=len(chunks),
                    section=section.heading,
                    text=piece,
                    page=section.page,
                    line=section.line,
                    date=section.date,
                )
            )
    return chunks


def split_text(text: str, max_chars: int) -> list[str]:
    """Greedy packing of paragraphs (then sentences, then hard cuts) into pieces <= max_chars."""
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    units: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if len(para) <= max_chars:
            units.append(para)
            continue
        for sentence in _SENTENCE.split(para):
            sentence = sentence.strip()
            while len(sentence) > max_chars:
                units.append(sentence[:max_chars])
                sentence = sentence[max_chars:]
            if sentence:
                units.append(sentence)
    pieces: list[str] = []
    current = ""
    for unit in units:
        if not unit:
            continue
        joined = f"{current}\n\n{unit}" if current else unit
        if len(joined) <= max_chars:
            current = joined
        else:
            pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return [p for p in pieces if p]
