"""Terminal output: ranks, titles, paths › sections, snippets and warnings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..models import SearchResult


def search_text(result: SearchResult) -> str:
    lines = [f'Search: "{result.query}" ({result.total_matches} matches, '
             f"showing top {result.returned})"]
    if result.filters:
        shown = {k: v for k, v in result.filters.items() if k != "query_text"}
        if shown:
            lines.append("Filters: " + ", ".join(f"{k}={_flat(v)}" for k, v in shown.items()))
    for rank, hit in enumerate(result.results, start=1):
        src = hit.source
        page = f" (p.{src.page})" if src.page else ""
        tags = f" [{', '.join(src.tags)}]" if src.tags else ""
        status = f" ({src.status})" if src.status else ""
        stale = " [changed since indexed]" if src.stale else ""
        lines.append(f"{rank}. [{hit.score:.3f}] {src.title}{page} [{src.type}]{tags}{status}"
                     f"{stale}")
        where = src.path + (f" › {hit.section}" if hit.section else "")
        lines.append(f"   {where}")
        lines.append(f"   {hit.snippet}")
        if hit.related:
            lines.append("   related: " + ", ".join(r.path for r in hit.related))
        if hit.content is not None:
            lines.append("   ---")
            lines.extend("   " + line for line in hit.content.splitlines())
    if not result.results:
        lines.append("No results.")
    for warning in result.warnings:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def _flat(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


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
            lines.append(f"{pad}{key}:")
            lines.append(mapping(value, indent + 1))
        elif isinstance(value, list) and value and isinstance(value[0], Mapping):
            lines.append(f"{pad}{key}:")
            for item in value:
                lines.append(f"{pad}  - " + ", ".join(f"{k}={_flat(v)}" for k, v in item.items()))
        else:
            lines.append(f"{pad}{key}: {_flat(value) if value is not None else '-'}")
    return "\n".join(lines)
