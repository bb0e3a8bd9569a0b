"""Search JSON (as `tsm search -f json` prints it) → <knowledge_search> XML (prompt-format.md).

Pure: the prompt context (core/context.py) renders what it injects with it, and tests feed
it hand-made dicts, since the search's JSON is the public shape a hit is judged in.

Every text field (query, type, status, path, section, snippet, related paths) is shown as
`shown_text` makes it: format characters (zero-width, bidi, TAG) removed, then secrets
redacted (tsm's own table). A key the user once wrote in a note, or in a file's name, stays
in the note, but is never put into a prompt by itself, nor is text no reader can see.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..text.redaction import find_secrets, for_model, strip_format

DEFAULT_SNIPPET_BUDGET = 1000
# The CLI's snippets are at most 200 characters; a result without one is previewed the same way.
TEXT_FALLBACK_CHARS = 200
FALLBACK_CATEGORY = "unknown"

# Everything XML 1.0 forbids (C0 controls but tab/LF/CR, lone surrogates, U+FFFE/U+FFFF):
# one stray byte of a pasted log must not make the whole block unparsable.
# Written as the set itself: its complement over all of Unicode took 5.7 ms to compile, on
# every prompt.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def strip_illegal(text: str) -> str:
    """Drop the characters that XML 1.0 cannot carry, even as character references."""
    return _ILLEGAL_XML.sub("", text)


def shown_text(text: str) -> str:
    """What a model is shown of a field: without what XML cannot carry, without format
    characters, secrets redacted (in that order: a NUL inside a key must not hide it)."""
    return for_model(strip_illegal(text))


def escape_text(text: str) -> str:
    """Escape element content: `&`, `<`, and the `>` of `]]>`, which is illegal in content;
    format characters go too, whatever the field."""
    text = strip_format(strip_illegal(text)).replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("]]>", "]]&gt;")


def escape_attr(text: str) -> str:
    """Escape an attribute value: `&`, `<`, `"`, and tab/LF/CR (parsers turn them into spaces)."""
    text = strip_format(strip_illegal(text))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    return text.replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")


def snippet_budget(environ: Mapping[str, str]) -> int:
    """TSM_SNIPPET_BUDGET as a non-negative int; a missing or malformed value means the default."""
    try:
        return max(0, int(environ.get("TSM_SNIPPET_BUDGET", DEFAULT_SNIPPET_BUDGET)))
    except ValueError:
        return DEFAULT_SNIPPET_BUDGET


def render_knowledge_search(
    search: Mapping[str, Any],
    *,
    budget: int = DEFAULT_SNIPPET_BUDGET,
    query: str | None = None,
) -> str:
    """Render one search result set; `query` is used only when the JSON does not echo one."""
    shown_query = search.get("query")
    if not isinstance(shown_query, str):
        shown_query = query or ""
    results = [r for r in _as_list(search.get("results")) if isinstance(r, Mapping)]
    if not results:
        shown = escape_attr(shown_text(shown_query))
        return f'<knowledge_search query="{shown}" count="0" total="0"/>'
    total = search.get("total_matches")
    if not isinstance(total, int) or isinstance(total, bool):
        total = len(results)

    lines = [
        f'<knowledge_search query="{escape_attr(shown_text(shown_query))}" '
        f'count="{len(results)}" total="{total}">'
    ]
    snippets = _budgeted_snippets((_snippet_of(r) for r in results), budget)
    for index, result in enumerate(results, start=1):
        lines.extend(_result_lines(index, result, snippets[index - 1]))
    lines.append("</knowledge_search>")
    return "\n".join(lines)


def _budgeted_snippets(snippets: Iterable[str], budget: int) -> list[str | None]:
    """Keep snippets in rank order while they fit; from the first that does not, keep none.

    Stopping at the first overflow (rather than skipping it and packing smaller ones below)
    keeps the rule predictable: a preview never appears under a result whose better-ranked
    neighbour lost its own.
    """
    kept: list[str | None] = []
    used = 0
    overflowed = False
    for snippet in snippets:
        if not overflowed and used + len(snippet) <= budget:
            kept.append(snippet)
            used += len(snippet)
        else:
            overflowed = True
            kept.append(None)
    return kept


def _result_lines(index: int, result: Mapping[str, Any], snippet: str | None) -> list[str]:
    source = result.get("source")
    if not isinstance(source, Mapping):
        source = {}
    category = _text(source.get("category")) or _text(source.get("type")) or FALLBACK_CATEGORY
    status = _text(source.get("status"))
    status_attr = f' status="{escape_attr(shown_text(status))}"' if status else ""
    lines = [
        f'<result index="{index}" score="{result_score(result):.3f}">',
        f'<source type="{escape_attr(shown_text(category))}"{status_attr}>'
        f"{escape_text(shown_text(_text(source.get('path'))))}</source>",
        f"<section>{escape_text(shown_text(_text(result.get('section'))))}</section>",
        f"<snippet>\n{escape_text(snippet)}\n</snippet>" if snippet else "<snippet/>",
    ]
    related = _related_paths(result.get("related"))
    if related:
        lines.append(f"<related>{escape_text(', '.join(map(shown_text, related)))}</related>")
    lines.append("</result>")
    return lines


def _snippet_of(result: Mapping[str, Any]) -> str:
    """The CLI's snippet, else the start of the chunk text; counted after cleaning and
    redaction, as shown."""
    chunk = _text(result.get("text"))
    snippet = _text(result.get("snippet"))
    if not snippet.strip():
        snippet = chunk[:TEXT_FALLBACK_CHARS]
    shown = shown_text(snippet).strip()
    return shown if _clear_of_cut_secrets(shown, chunk) else ""


def _clear_of_cut_secrets(shown: str, chunk: str) -> bool:
    """Whether a redacted snippet is free of secrets: a snippet is a window of its chunk, and a
    window can cut a key so short that its shape no longer matches. When the chunk holds a
    secret, the snippet is kept only if its words appear as they are in the redacted chunk."""
    if not find_secrets(chunk):
        return True
    core = " ".join(shown.strip("…").split())
    return core in " ".join(shown_text(chunk).split())


def _related_paths(related: object) -> list[str]:
    paths: list[str] = []
    for item in _as_list(related):
        path = _text(item.get("path")) if isinstance(item, Mapping) else _text(item)
        if path and path not in paths:
            paths.append(path)
    return paths


def result_score(result: Mapping[str, Any]) -> float:
    """The result's score as a float; a missing or non-numeric score counts as 0."""
    score = number(result.get("score"))
    return 0.0 if score is None else score


def number(value: object) -> float | None:
    """A JSON number as a float; None for anything else (booleans included)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
