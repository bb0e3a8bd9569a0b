"""A Markdown text's headings and the lines they start on, read as the indexer reads them:
what lets an interface cut one section out of a document's text (MCP `get`'s `section`)."""

from __future__ import annotations

from pathlib import Path


def section_starts(path: str, text: str) -> list[tuple[str, int | None]]:
    """(heading path, 1-based first line) of each section of the Markdown `text`."""
    from ..sources.markdown import read

    parsed = read(Path(path), path, text.encode("utf-8"))
    return [(section.heading, section.line) for section in parsed.sections]
