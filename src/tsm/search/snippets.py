"""Snippets: up to 200 characters centred on the densest cluster of query terms in a chunk.
Python slices code points, so Japanese text is never cut inside a character."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..text.case import lower_in_place

SNIPPET_CHARS = 200
_LEAD = 60  # characters of context kept before the first matched term
_BOUNDARY = re.compile(r"[\s。、！？.,!?;:]")


def make_snippet(text: str, terms: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """The best window of `text` for `terms`; the start of the text when nothing matches."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lower = lower_in_place(flat)
    positions: list[tuple[int, int]] = []
    for term in {lower_in_place(t) for t in terms if t}:
        start = lower.find(term)
        while start != -1 and len(positions) < 500:
            positions.append((start, len(term)))
            start = lower.find(term, start + 1)
    if not positions:
        return _cut(flat, 0, width)
    positions.sort()
    best_start, best_score = positions[0][0], -1
    for i, (pos, _) in enumerate(positions):
        window_end = pos + width - _LEAD
        score = len({lower[p : p + n] for p, n in positions[i:] if p + n <= window_end})
        if score > best_score:
            best_start, best_score = pos, score
    return _cut(flat, max(0, best_start - _LEAD), width)


def _cut(text: str, start: int, width: int) -> str:
    if start > 0:
        match = _BOUNDARY.search(text, start, min(len(text), start + 20))
        start = match.end() if match else start
    prefix = "…" if start > 0 else ""
    room = width - len(prefix)
    body = text[start : start + room]
    if start + room < len(text):
        body = body[: room - 1].rstrip() + "…"
    return prefix + body
