"""Markdown notes: YAML frontmatter, inline #tags, heading tree → sections, wikilinks and
relative links. Code fences are skipped for headings, tags and links; HTML comments
(sources/comments.py) give no title, heading, section text or link.

Inline #tags come from prose only, as markdown-it-py's CommonMark tokens tell it: never
from fenced or indented code, inline code, raw HTML (blocks, and inline tags with their
attributes), autolinks, escapes (`\\#x`) or entities (`&#35;`); and, for notes written as MDX
(docs sites), never from `{…}` expressions or `import`/`export` blocks. A `#` inside a word
or after `/`, `(`, `[`, `&` or a quote never starts a tag (URLs' fragments, `[x](#anchor)`,
`'#fff'`).

Linear time on any input (a note is untrusted): no pattern here can backtrack over a line
more than a constant number of times, since each scan stops at the next bracket, quote or
space; bench/markdown_adversarial.py measures it against plain text. The frontmatter is
capped in size and YAML aliases are refused (an alias bomb expands exponentially)."""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..models import Document, Link, Section
from .base import MAX_ALIASES, MAX_NAME_CHARS, MAX_TAG_CHARS, MAX_TAGS, cut, decode_text
from .comments import without_comments

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
FRONTMATTER_MAX_CHARS = 64 * 1024  # larger: its metadata is ignored, like broken YAML
FRONTMATTER_MAX_DEPTH = 32
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*)")  # the closing #s: _heading_text
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A tag starts at a line start, after whitespace, `*` (**#tag**) or Japanese punctuation
# (読んだ。#読書), has at least one non-digit, may nest with '/'. Run on prose (_prose_tags).
_TAG = re.compile(
    r"(?:(?<=[\s*~。、，．！？：；」』）】])|^)#([^\W\d][\w\-/]*|\d+[^\W\d][\w\-/]*)",
    re.MULTILINE,
)
_TAG_HINT = re.compile(r"#\w")  # no match anywhere: no tag, no need to parse
# Longer bodies give no inline tags (frontmatter tags still count): markdown-it-py is linear
# but costs some µs per token, and a hostile note can be all tokens (a million `- x` lines).
TAGS_MAX_CHARS = 1_000_000
_OPAQUE = "\ufffc"  # stands in for code, HTML, an escape, an expression: no tag touches it
# MDX's ESM: `import`/`export` at the start of a line opens JavaScript, not prose.
_ESM = re.compile(
    r"(?:import\s+(?:['\"]|[\w*{][^\n]*?\sfrom\s*['\"])"
    r"|export\s+(?:(?:const|let|var|function|async|class|default|type|interface|enum)\b|[{*]))"
)
_BRACES = re.compile(r"[{}]")
# No bracket inside a link's parts: a scan stops at the next '[' or ']', so a line of
# brackets costs one pass (with '[^\]]*' each '[' scanned to the end of the line: quadratic).
_WIKILINK = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_MD_LINK = re.compile(
    r"(?<!!)\[[^\[\]\n]*\]\(\s*(?:<([^<>\n]+)>|([^\s()<>\[\]]+))"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")
_BACKTICKS = re.compile(r"`+")


def read(path: Path, rel: str, data: bytes) -> Document:
    text = decode_text(data)
    meta, body, body_line = split_frontmatter(text)
    sections, headings_h1, links = _parse_body(without_comments(body), body_line)
    inline_tags = _prose_tags(body)
    title = cut(_str(meta.get("title")) or (headings_h1[0] if headings_h1 else "") or path.stem)
    if not sections and _str(meta.get("title")):  # frontmatter alone: found by its title
        sections = [Section("", _str(meta.get("title")) or title, line=1, text_line=1)]
    tags = _unique([*_as_list(meta.get("tags")), *_as_list(meta.get("tag")), *inline_tags])
    tags = [t for t in tags if len(t) <= MAX_TAG_CHARS][:MAX_TAGS]  # see base.MAX_TAGS
    aliases = _as_names(meta.get("aliases")) + _as_names(meta.get("alias"))
    aliases = [a for a in aliases if len(a) <= MAX_NAME_CHARS][:MAX_ALIASES]
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
        path=rel,
        type="markdown",
        title=title,
        text=text,
        sections=tuple(sections),
        tags=tuple(t.lower() for t in tags),
        links=tuple(links),
        aliases=tuple(aliases),
        status=status.lower() if status else None,
        created=created,
        updated=updated,
        date=doc_date,
        date_source=source,
    )


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, int]:
    """Return (metadata, body, first body line). Broken YAML yields empty metadata, body kept."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 1
    body = text[match.end() :]
    first_line = text[: match.end()].count("\n") + 1
    if match.end() > FRONTMATTER_MAX_CHARS:
        return {}, body, first_line
    import yaml

    try:
        meta = _load_yaml(match.group(1) or "") or {}
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):  # created: 2024-13-45
        return {}, body, first_line
    return (meta if isinstance(meta, dict) else {}), body, first_line


def _load_yaml(text: str) -> Any:
    """PyYAML's safe loader, after a pass over the parse events that refuses aliases (nested
    aliases expand exponentially: a 400-byte `tags:` bomb ran a minute to MemoryError) and
    nesting deeper than FRONTMATTER_MAX_DEPTH (libyaml's loader recurses on the C stack and
    crashes the process on `[[[[…`). The event parser itself keeps an explicit stack."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases are not allowed in frontmatter")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > FRONTMATTER_MAX_DEPTH:
                raise yaml.YAMLError("frontmatter nested too deeply")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.load(text, Loader=loader)


def _parse_body(body: str, first_line: int):  # type: ignore[no-untyped-def]
    sections: list[Section] = []
    # Each heading as a section of its own words: the note's sections when no heading has
    # text under it (a note that is one heading, `# 歯医者 11/30 15:00`, is found by it).
    headings: list[Section] = []
    h1s: list[str] = []
    links: list[Link] = []
    stack: list[tuple[int, str]] = []
    current: list[str] = []  # one entry per line of the file, from line `text_start` on
    start = text_start = first_line
    fence: str | None = None

    def flush(next_start: int) -> None:
        nonlocal current, start, text_start
        raw = "\n".join(current)
        text = raw.strip()
        if text:
            # the blank lines stripped off the top still count
            begins = text_start + raw[: len(raw) - len(raw.lstrip())].count("\n")
            path = " > ".join(h for _, h in stack)
            sections.append(Section(path, text, line=start, text_line=begins))
        current, start, text_start = [], next_start, next_start + 1

    for offset, line in enumerate(body.split("\n")):
        lineno = first_line + offset
        fence_match = _FENCE.match(line)
        if fence is not None:
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
            ):
                fence = None
            current.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            current.append(line)
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            flush(lineno)
            level, title = len(heading.group(1)), _strip_inline(_heading_text(heading.group(2)))
            if len(title) > MAX_NAME_CHARS:  # its words stay searchable as the section's text
                current.append(title)
                text_start = lineno
                title = cut(title)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            if title:
                heading_path = " > ".join(h for _, h in stack)
                headings.append(Section(heading_path, title, line=lineno, text_line=lineno))
            if level == 1:
                h1s.append(title)
            continue
        current.append(line)
        plain = _without_code_spans(line)
        links += [Link(t.strip(), "wikilink") for t in _WIKILINK.findall(plain) if t.strip()]
        for angled, bare in _MD_LINK.findall(plain):
            target = angled or bare
            if not _SCHEME.match(target) and not target.startswith("#"):
                links.append(Link(unquote(target.split("#")[0]), "markdown"))
    flush(0)
    return sections or headings, h1s, links


@functools.cache
def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    """CommonMark block and inline parsers (markdown-it-py, imported on first use). Escapes
    and entities stay tokens of their own (no text_join), so `\\#x` and `&#35;x` are no tags;
    the block parser leaves inline parsing to `_prose_tags`, which runs it only on the
    blocks that may hold a tag. The inline parser keeps the rules that hide a `#` from
    prose (code spans, inline HTML, autolinks, escapes, entities): links and emphasis,
    whose text is prose anyway, cost ten times more on a line of brackets or stars."""
    from markdown_it import MarkdownIt

    blocks = MarkdownIt("commonmark").disable(["inline", "text_join"])
    inlines = MarkdownIt("commonmark").disable(
        ["text_join", "link", "image", "emphasis", "balance_pairs", "fragments_join"]
    )
    return blocks, inlines


def _prose_tags(body: str) -> list[str]:
    """The #tags in the body's prose: paragraphs, list items, quotes (not headings)."""
    if len(body) > TAGS_MAX_CHARS or not _TAG_HINT.search(body):
        return []
    blocks, inlines = _parsers()
    env: dict[str, Any] = {}  # link reference definitions, for the inline parser
    tokens = blocks.parse(body, env)
    esm = _esm_lines(tokens, body.split("\n"))
    tags: list[str] = []
    in_heading = False
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            in_heading = token.type == "heading_open"
        if token.type != "inline" or in_heading or not _TAG_HINT.search(token.content):
            continue
        if token.map and token.map[0] in esm:
            continue
        children = inlines.parseInline(token.content, env)[0].children or []
        text = _without_expressions(_prose_text(children))
        tags += [t.rstrip("/-") for t in _TAG.findall(text)]
    return tags


def _prose_text(children: list[Token]) -> str:
    """An inline token's text, with what is not prose replaced by _OPAQUE: code spans,
    inline HTML (a tag and its attributes), autolinks, escapes and entities."""
    parts = []
    for child in children:
        if child.type == "text":
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type in ("code_inline", "html_inline", "text_special", "link_open"):
            parts.append(_OPAQUE)  # link_open: an autolink (<https://x/y#z>)
    return "".join(parts)


def _without_expressions(text: str) -> str:
    """`text` with each balanced `{…}` (an MDX expression, JSX attributes' values) replaced
    by _OPAQUE; an unbalanced brace is literal. One pass with a stack: linear."""
    if "{" not in text:
        return text
    spans: list[tuple[int, int]] = []
    opened: list[int] = []
    for match in _BRACES.finditer(text):
        if match.group() == "{":
            opened.append(match.start())
        elif opened:
            spans.append((opened.pop(), match.end()))
    parts, kept_from = [], 0
    for start, end in sorted(spans):
        if start >= kept_from:  # not inside a span already cut
            parts += [text[kept_from:start], _OPAQUE]
            kept_from = end
    parts.append(text[kept_from:])
    return "".join(parts)


def _esm_lines(tokens: list[Token], lines: list[str]) -> set[int]:
    """Lines of MDX `import`/`export` blocks: a top-level paragraph that starts like one, and
    the top-level blocks after it (blank lines inside a function, say) until its brackets
    balance or a heading comes."""
    esm: set[int] = set()
    depth = 0
    for token in tokens:
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        start, end = token.map
        if depth > 0 and token.type == "heading_open":
            depth = 0
        if depth <= 0:
            first = lines[start] if start < len(lines) else ""
            if token.type != "paragraph_open" or not _ESM.match(first):
                continue
        source = "\n".join(lines[start:end])
        depth = (
            max(depth, 0)
            + sum(source.count(c) for c in "{([")
            - sum(source.count(c) for c in "})]")
        )
        esm.update(range(start, end))
    return esm


def _heading_text(text: str) -> str:
    """A heading's text without its optional closing sequence (`## Title ##`)."""
    text = text.rstrip(" \t")
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.rstrip(" \t")
    return text


def _without_code_spans(line: str) -> str:
    """The line with each `code` span replaced by a space. A span closes at the next run of
    exactly as many backticks (CommonMark); runs are paired through an index by length, so
    an unclosed run costs one lookup, not a scan of the rest of the line."""
    if "`" not in line:
        return line
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    parts, kept_from, i = [], 0, 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        k = bisect.bisect_right(same, i)
        if k == len(same):  # no closing run: the backticks are literal
            i += 1
            continue
        close = same[k]
        parts.append(line[kept_from:start])
        parts.append(" ")
        kept_from = runs[close][1]
        i = close + 1
    parts.append(line[kept_from:])
    return "".join(parts)


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
        return [
            str(v).strip().lstrip("#")
            for v in value
            if v is not None and not isinstance(v, dict | list) and str(v).strip()
        ]
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
