"""Cutting a stored document down to what an MCP client asked for: a line range or one
section, under a character budget (pure). Without it `get` pushes whole books into a model's
context window."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UserError

DEFAULT_MAX_CHARS = 20_000  # ≈ 5-20k tokens: fits every client's tool-result limit


@dataclass(frozen=True)
class Excerpt:
    """Lines `start_line`..`end_line` (1-based, inclusive) of a document of `total_lines`."""

    text: str
    start_line: int
    end_line: int
    total_lines: int
    section: str | None = None
    truncated: bool = False

    def as_json(self) -> dict[str, object]:
        return {
            "start_line": self.start_line,
            "end_line": self.end_line,
            "total_lines": self.total_lines,
            "section": self.section,
            "truncated": self.truncated,
            "next_start_line": self.end_line + 1 if self.truncated else None,
        }


def split_lines(text: str) -> list[str]:
    """Lines numbered as the Markdown reader numbers them (split on "\\n" only, so a form
    feed or U+2028 inside a line does not shift the numbers the reader stored)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def by_lines(
    text: str,
    start: int | None,
    end: int | None,
    max_chars: int = DEFAULT_MAX_CHARS,
    section: str | None = None,
) -> Excerpt:
    """Lines start..end (defaults: the whole text), cut at a line boundary after max_chars."""
    lines = split_lines(text)
    total = len(lines)
    first = 1 if start is None else start
    last = total if end is None else min(end, total)
    if first < 1:
        raise UserError(f"start_line must be >= 1, got {first}")
    if max_chars < 1:
        raise UserError(f"max_chars must be >= 1, got {max_chars}")
    if end is not None and end < first:
        raise UserError(f"end_line {end} is before start_line {first}")
    if total and first > total:
        raise UserError(f"start_line {first} is past the end: the document has {total} lines")
    chosen = lines[first - 1 : last]
    size, kept = 0, 0
    for line in chosen:
        if kept and size + len(line) + 1 > max_chars:
            break
        size += len(line) + 1
        kept += 1
    truncated = kept < len(chosen)
    body = "\n".join(chosen[:kept])
    if kept == 1 and len(body) > max_chars:  # one enormous line (a PDF page, minified text)
        body, truncated = body[:max_chars], True
    return Excerpt(body, first, first + kept - 1, total, section, truncated)


def section_lines(
    sections: Sequence[tuple[str, int | None]], total_lines: int, name: str
) -> tuple[str, int, int]:
    """The heading path matching `name` and the lines it spans, subsections included.

    `sections` are (heading path "H1 > H2", first line) in document order. `name` may be the
    full path, its tail ("H2", "H1 > H2") or a parent that only has subsections ("H1")."""
    wanted = _parts(name)
    if not wanted:
        raise UserError("section must not be empty")
    anchor: tuple[str, ...] | None = None
    for heading, _ in sections:
        parts = _parts(heading)
        for stop in range(len(wanted), len(parts) + 1):
            if parts[stop - len(wanted) : stop] == wanted:
                anchor = parts[:stop]
                break
        if anchor is not None:
            break
    if anchor is None:
        listed = ", ".join(repr(h) for h, _ in sections[:12] if h) or "none"
        raise UserError(f"no section {name!r} in this document", f"its sections: {listed}")
    start = end = None
    for index, (heading, line) in enumerate(sections):
        inside = _parts(heading)[: len(anchor)] == anchor
        if inside and start is None:
            start = line
        elif not inside and start is not None:
            end = (line or 1) - 1
            break
        if start is not None and index == len(sections) - 1:
            end = total_lines
    if start is None or end is None:
        raise UserError(f"section {name!r} has no line numbers", "use start_line/end_line instead")
    return " > ".join(_original(sections, anchor)), start, end


def _parts(heading: str) -> tuple[str, ...]:
    return tuple(p.strip().casefold() for p in heading.split(">") if p.strip())


def _original(sections: Sequence[tuple[str, int | None]], anchor: tuple[str, ...]) -> list[str]:
    """The anchor's heading path in the document's own spelling (not case-folded)."""
    for heading, _ in sections:
        parts = [p.strip() for p in heading.split(">") if p.strip()]
        if tuple(p.casefold() for p in parts[: len(anchor)]) == anchor:
            return parts[: len(anchor)]
    return list(anchor)
