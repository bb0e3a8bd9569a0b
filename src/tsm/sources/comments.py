"""HTML comments in a Markdown body, found as CommonMark finds them, so that what a reader
never sees is never a title, a section, a snippet or a link: translated books keep the
original text in `<!-- … -->` above each paragraph, templates keep notes to the writer.

A comment is a block (`<!--` opening an HTML block, to the line holding `-->`, or to the
end of its container when none does) or inline (a complete `<!-- … -->` in a paragraph or a
heading, across lines too). `<!--` in a code block or a code span, or escaped, is text."""

from __future__ import annotations

import bisect
import functools
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline

OPENER = "<!--"
# Inside an HTML block: `<!-->` and `<!--->` are whole comments, else to the first `-->`.
_BLOCK_COMMENT = re.compile(r"<!---?>|<!--.*?(?:-->|\Z)", re.DOTALL)
_SPANS = "tsm_comment_spans"  # the inline parser's env key for the comments it found


def without_comments(body: str) -> str:
    """`body` with every HTML comment removed, its line breaks kept (so every other line
    keeps its number). A body with no `<!--` is returned as is, without parsing."""
    if OPENER not in body:
        return body
    lines = body.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    spans: list[tuple[int, int]] = []
    blocks, inlines = _parsers()
    references: dict[str, Any] = {}  # link reference definitions, for the inline parser
    for token in blocks.parse(body, references):
        if token.map is None or OPENER not in token.content:
            continue
        first, end = token.map
        if token.type == "html_block":
            region = body[starts[first] : starts[end] - 1]
            spans += [
                (starts[first] + m.start(), starts[first] + m.end())
                for m in _BLOCK_COMMENT.finditer(region)
            ]
        elif token.type == "inline":
            found = _inline_comments(inlines, token.content, references)
            if found:
                spans += _in_body(found, token.content, lines, starts, first)
    return _cut(body, spans)


def _inline_comments(
    inlines: MarkdownIt, content: str, references: dict[str, Any]
) -> list[tuple[int, int]]:
    """The (start, end) of each comment in an inline token's content, as the parser saw them."""
    env = dict(references)
    inlines.parseInline(content, env)
    return sorted(set(env.get(_SPANS, ())))


def _in_body(
    found: list[tuple[int, int]], content: str, lines: list[str], starts: list[int], first: int
) -> list[tuple[int, int]]:
    """Spans of an inline token's content moved into the body. The content's lines are the
    source lines from `first` on without their container prefix (`> `, indentation) or
    heading marks: each is found in its source line, and both ends of a span moved there."""
    columns: list[int] = []  # where each content line starts in the body
    for offset, text in enumerate(content.split("\n")):
        if first + offset >= len(lines):
            return []
        column = lines[first + offset].find(text.rstrip())
        if column < 0:  # a tab expanded into spaces: leave the text as it is
            return []
        columns.append(starts[first + offset] + column)
    line_starts = [0]
    for text in content.split("\n")[:-1]:
        line_starts.append(line_starts[-1] + len(text) + 1)

    def moved(position: int) -> int:
        row = bisect.bisect_right(line_starts, position) - 1
        return columns[row] + position - line_starts[row]

    return [(moved(start), moved(end - 1) + 1) for start, end in found]


def _cut(body: str, spans: list[tuple[int, int]]) -> str:
    """`body` without the characters of `spans`, keeping the newlines they held."""
    parts, kept_from = [], 0
    for start, end in sorted(spans):
        if start < kept_from or not body.startswith(OPENER, start):
            continue  # overlapping, or not where a comment starts: never cut text blindly
        parts += [body[kept_from:start], "\n" * body.count("\n", start, end)]
        kept_from = end
    parts.append(body[kept_from:])
    return "".join(parts)


@functools.cache
def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    """A CommonMark block parser, and an inline parser whose HTML rule also notes where
    each comment it accepts starts and ends (in the env, under _SPANS). Code spans,
    escapes and autolinks keep their rules: they are what makes a `<!--` text."""
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import html_inline

    def noting_comments(state: StateInline, silent: bool) -> bool:
        start = state.pos
        if not html_inline(state, silent):
            return False
        if not silent and state.src.startswith(OPENER, start):
            state.env.setdefault(_SPANS, []).append((start, state.pos))
        return True

    blocks = MarkdownIt("commonmark").disable("inline")
    # Links and emphasis hide no comment (their text is parsed for HTML like any other) and
    # cost ten times more on a line of brackets or stars: a hostile note is all of them.
    inlines = MarkdownIt("commonmark").disable(
        ["link", "image", "emphasis", "balance_pairs", "fragments_join"]
    )
    inlines.inline.ruler.at("html_inline", noting_comments)
    return blocks, inlines
