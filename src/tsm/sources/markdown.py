"""Markdown notes: YAML frontmatter, inline #tags, heading tree → sections, wikilinks and
relative links. Code fences are skipped for headings, tags and links."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..models import Document, Link, Section
from . import decode_text

_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A tag starts after whitespace or line start, has at least one non-digit, may nest with '/'.
_TAG = re.compile(r"(?:(?<=\s)|^)#([^\W\d][\w\-/]*|\d+[^\W\d][\w\-/]*)", re.UNICODE)
_WIKILINK = re.compile(r"!?\[\[([^\]\|#\n]*)(?:#[^\]\|\n]*)?(?:\|[^\]\n]*)?\]\]")
_MD_LINK = re.compile(
    r"(?<!!)\[[^\]\n]*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+[\"'][^)]*[\"'])?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")
_INLINE_CODE = re.compile(r"(`+)[^\n]*?\1")  # `code`, ``code with ` inside``


def read(path: Path, rel: str, data: bytes) -> Document:
    text = decode_text(data)
    meta, body, body_line = split_frontmatter(text)
    sections, headings_h1, inline_tags, links = _parse_body(body, body_line)
    title = _str(meta.get("title")) or (headings_h1[0] if headings_h1 else "") or path.stem
    tags = _unique([*_as_list(meta.get("tags")), *_as_list(meta.get("tag")), *inline_tags])
    updated = _date(meta.get("updated")) or _date(meta.get("modified"))
    date = _date(meta.get("date"))
    created = _date(meta.get("created")) or date
    doc_date, source = None, None
    for key, value in (("updated", updated), ("date", date), ("created", created)):
        if value:
            doc_date, source = value, f"frontmatter:{key}"
            break
    status = _str(meta.get("status"))
    return Document(
        path=rel, type="markdown", title=title, text=text, sections=tuple(sections),
        tags=tuple(t.lower() for t in tags), links=tuple(links),
        aliases=tuple(_as_names(meta.get("aliases")) + _as_names(meta.get("alias"))),
        status=status.lower() if status else None, created=created, updated=updated,
        date=doc_date, date_source=source,
    )


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, int]:
    """Return (metadata, body, first body line). Broken YAML yields empty metadata, body kept."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 1
    body = text[match.end():]
    first_line = text[: match.end()].count("\n") + 1
    import yaml

    try:
        meta = yaml.safe_load(match.group(1) or "") or {}
    except (yaml.YAMLError, ValueError, TypeError):  # e.g. created: 2024-13-45
        return {}, body, first_line
    return (meta if isinstance(meta, dict) else {}), body, first_line


def _parse_body(body: str, first_line: int):  # type: ignore[no-untyped-def]
    sections: list[Section] = []
    h1s: list[str] = []
    tags: list[str] = []
    links: list[Link] = []
    stack: list[tuple[int, str]] = []
    current: list[str] = []
    start = first_line
    fence: str | None = None

    def flush(next_start: int) -> None:
        nonlocal current, start
        text = "\n".join(current).strip()
        if text:
            sections.append(Section(" > ".join(h for _, h in stack), text, line=start))
        current, start = [], next_start

    for offset, line in enumerate(body.split("\n")):
        lineno = first_line + offset
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and \
                    len(fence_match.group(1)) >= len(fence):
                fence = None
            current.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            current.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            flush(lineno)
            level, title = len(heading.group(1)), _strip_inline(heading.group(2))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            if level == 1:
                h1s.append(title)
            continue
        current.append(line)
        plain = _INLINE_CODE.sub(" ", line)
        tags += [t.rstrip("/-") for t in _TAG.findall(plain)]
        links += [Link(t.strip(), "wikilink") for t in _WIKILINK.findall(plain) if t.strip()]
        for angled, bare in _MD_LINK.findall(plain):
            target = angled or bare
            if not _SCHEME.match(target) and not target.startswith("#"):
                links.append(Link(unquote(target.split("#")[0]), "markdown"))
    flush(0)
    return sections, h1s, tags, links


def _strip_inline(text: str) -> str:
    text = _WIKILINK.sub(lambda m: m.group(1), text)
    return re.sub(r"[*_`]", "", text).strip()


def _str(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip().lstrip("#") for p in re.split(r"[,\s]+", value) if p.strip().lstrip("#")]
    if isinstance(value, list | tuple):
        return [str(v).strip().lstrip("#") for v in value
                if v is not None and not isinstance(v, dict | list) and str(v).strip()]
    return [str(value)]


def _as_names(value: Any) -> list[str]:
    """Aliases are whole names ("My Note"), unlike tags, so a string is one alias."""
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    return _as_list(value)


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item.lower() not in seen:
            seen[item.lower()] = None
    return list(seen)


def _date(value: Any) -> str | None:
    """Normalise a frontmatter date (YAML date, datetime or string) to YYYY-MM-DD."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        match = re.match(r"\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})", value)
        if match:
            try:
                return dt.date(*map(int, match.groups())).isoformat()
            except ValueError:
                return None
    return None
