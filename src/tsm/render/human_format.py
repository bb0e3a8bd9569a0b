"""Terminal output: ranks, titles, paths › sections, snippets and warnings.

Everything printed for a human goes through `visible` (whole texts) or `one_line` (fields):
a note's title, path or body can hold terminal escapes (ESC/CSI, OSC 0/8/52 that retitle
the window, forge links or write the clipboard, BEL, backspace, CR, C1 controls, bidi
overrides), which are shown as `\\x1b`-style escapes instead of being obeyed. JSON output
keeps the exact text (json_format escapes these characters the JSON way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..models import SearchResult

# Bidirectional marks, embeddings, overrides and isolates ("Trojan Source", CVE-2021-42574).
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 controls but tab and newline, DEL, C1 controls, bidi controls.
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}]")
# In a one-line field, tab, newline and the Unicode line separators too (no forged lines).
_UNSAFE_IN_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI}\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` safe to print on a terminal: control characters become visible escapes;
    newlines and tabs stay (CRLF line ends become newlines)."""
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def one_line(value: object) -> str:
    """A field (title, path, tag …) as one safe line: newlines and tabs are escaped too."""
    return _UNSAFE_IN_LINE.sub(_escape, str(value))


def search_text(result: SearchResult) -> str:
    f = one_line
    lines = [
        f'Search: "{f(result.query)}" ({result.total_matches} matches, '
        f"showing top {result.returned})"
    ]
    if result.filters:
        shown = {k: v for k, v in result.filters.items() if k != "query_text"}
        if shown:
            lines.append("Filters: " + ", ".join(f"{f(k)}={_flat(v)}" for k, v in shown.items()))
    for rank, hit in enumerate(result.results, start=1):
        src = hit.source
        page = f" (p.{src.page})" if src.page else ""
        tags = f" [{', '.join(map(f, src.tags))}]" if src.tags else ""
        status = f" ({f(src.status)})" if src.status else ""
        stale = " [changed since indexed]" if src.stale else ""
        lines.append(
            f"{rank}. [{hit.score:.3f}] {f(src.title)}{page} [{f(src.type)}]{tags}{status}{stale}"
        )
        where = f(src.path) + (f" › {f(hit.section)}" if hit.section else "")
        lines.append(f"   {where}")
        lines.append(f"   {f(hit.snippet)}")
        if hit.related:
            lines.append("   related: " + ", ".join(f(r.path) for r in hit.related))
        if hit.content is not None:
            lines.append("   ---")
            lines.extend("   " + line for line in visible(hit.content).splitlines())
    if not result.results:
        lines.append("No results.")
    for warning in result.warnings:
        lines.append(f"warning: {f(warning)}")
    return "\n".join(lines)


def _flat(value: Any) -> str:
    return ",".join(map(one_line, value)) if isinstance(value, list) else one_line(value)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A plain aligned table; lists are joined with commas."""
    if not rows:
        return "(none)"
    cells = [[_flat(r.get(c, "")) if r.get(c) is not None else "" for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    head = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    body = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join([head, *body])


def mapping(data: Mapping[str, Any], indent: int = 0) -> str:
    """Nested key: value lines for status/info/doctor."""
    lines = []
    pad = "  " * indent
    for key, value in data.items():
        if isinstance(value, Mapping):
            lines.append(f"{pad}{one_line(key)}:")
            lines.append(mapping(value, indent + 1))
        elif isinstance(value, list) and value and isinstance(value[0], Mapping):
            lines.append(f"{pad}{one_line(key)}:")
            for item in value:
                lines.append(
                    f"{pad}  - " + ", ".join(f"{one_line(k)}={_flat(v)}" for k, v in item.items())
                )
        else:
            lines.append(f"{pad}{one_line(key)}: {_flat(value) if value is not None else '-'}")
    return "\n".join(lines)
