"""Heading-first chunking: each section becomes one chunk, and a section longer than
`max_chars` is split on paragraph, then sentence boundaries (never inside a character).
Each chunk keeps the line of the file it starts on, counted from its section's."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..models import Chunk, Section

_PARAGRAPH = re.compile(r"\n[ \t]*\n+")
# After Japanese full stops always; after . ! ? only when whitespace follows (not "v1.2").
_SENTENCE = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+")


def chunk_sections(sections: Iterable[Section], max_chars: int = 1000) -> list[Chunk]:
    """Split sections into chunks of at most `max_chars` characters, keeping section metadata
    and the line each chunk starts on (None where the section's text is not the file's)."""
    chunks: list[Chunk] = []
    for section in sections:
        for start, piece in split_pieces(section.text, max_chars):
            chunks.append(
                Chunk(
                    index=len(chunks),
                    section=section.heading,
                    text=piece,
                    page=section.page,
                    line=line_at(section.text, start, section.text_line),
                    date=section.date,
                )
            )
    return chunks


def line_at(text: str, offset: int, first_line: int | None) -> int | None:
    """The line of the file at `offset` of `text`, whose first character is on `first_line`."""
    if first_line is None:
        return None
    return first_line + text.count("\n", 0, offset)


def split_text(text: str, max_chars: int) -> list[str]:
    """Greedy packing of paragraphs (then sentences, then hard cuts) into pieces <= max_chars."""
    return [piece for _, piece in split_pieces(text, max_chars)]


def split_pieces(text: str, max_chars: int) -> list[tuple[int, str]]:
    """`split_text`'s pieces, each with the offset in `text` where it starts. A piece is its
    units joined by blank lines; each unit is a stretch of `text` as it stands, so the first
    one's place is found by looking for it after the previous unit's end."""
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    if len(stripped) <= max_chars:
        return [(lead, stripped)] if stripped else []
    units: list[tuple[int, str]] = []
    cursor = lead
    for para in _PARAGRAPH.split(stripped):
        para = para.strip()
        if not para:
            continue
        at = cursor = text.index(para, cursor)
        if len(para) <= max_chars:
            units.append((at, para))
            cursor = at + len(para)
            continue
        for sentence in _SENTENCE.split(para):
            sentence = sentence.strip()
            if not sentence:
                continue
            at = cursor = text.index(sentence, cursor)
            while len(sentence) > max_chars:
                units.append((at, sentence[:max_chars]))
                sentence, at = sentence[max_chars:], at + max_chars
            if sentence:
                units.append((at, sentence))
            cursor = at + len(sentence)
    pieces: list[tuple[int, str]] = []
    current, current_at = "", 0
    for at, unit in units:
        joined = f"{current}\n\n{unit}" if current else unit
        if len(joined) <= max_chars:
            current, current_at = joined, (current_at if current else at)
        else:
            pieces.append((current_at, current))
            current, current_at = unit, at
    if current:
        pieces.append((current_at, current))
    return [(at, p) for at, p in pieces if p]
