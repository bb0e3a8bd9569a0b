"""Terminal output: ranks, titles, paths › sections, snippets and warnings.

Everything printed for a human goes through `visible` (whole texts) or `one_line` (fields):
a note's title, path or body can hold terminal escapes (ESC/CSI, OSC 0/8/52 that retitle
the window, forge links or write the clipboard, BEL, backspace, CR, C1 controls) and format
characters no reader sees (bidi overrides, zero-width spaces and joiners, soft hyphen, BOM,
TAG characters that spell hidden words), which are shown as `\\x1b`-style escapes instead of
being obeyed or hidden. JSON output keeps the exact text (json_format escapes these characters
the JSON way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..models import Hit, SearchResult
from ..text.case import lower_in_place
from ..text.redaction import FORMAT_PATTERN
from .terminal import Terminal, fit, pad, width


class Styled(str):
    """Human text whose every field is already safe (one_line / visible) and which may hold
    our own SGR and OSC 8 sequences: output.rendered prints it as it is."""

    __slots__ = ()


# C0 controls but tab and newline, DEL, C1 controls, and every format character: the bidi
# controls among them ("Trojan Source", CVE-2021-42574), zero-width and TAG characters (a
# joiner between two emoji draws one picture and stays).
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f]|{FORMAT_PATTERN}")
# In a one-line field, tab, newline and the Unicode line separators too (no forged lines).
_UNSAFE_IN_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029]|{FORMAT_PATTERN}")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` safe to print on a terminal: control characters become visible escapes;
    newlines and tabs stay (CRLF line ends become newlines)."""
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def one_line(value: object) -> str:
    """A field (title, path, tag …) as one safe line: newlines and tabs are escaped too."""
    return _UNSAFE_IN_LINE.sub(_escape, str(value))


# A hit indexed before tsm stored the line its passage starts on has its line looked up in
# the note: the first screenfuls get one, not a -k 10000 dump.
LINE_NUMBERS_FOR = 100  # results


def search_text(result: SearchResult, terminal: Terminal | None = None) -> str:
    """The results for a human. With a `terminal`: colour, matched words highlighted, paths
    as links with the line the hit starts at (`path:LINE`); without one, plain text (MCP)."""
    f = one_line
    t = terminal or Terminal()
    lines = [f'Search: "{t.paint(f(result.query), "heading")}" ({_counts(result)})']
    if result.filters:
        shown = {k: v for k, v in result.filters.items() if k != "query_text"}
        if shown:
            lines.append("Filters: " + ", ".join(f"{f(k)}={_flat(v)}" for k, v in shown.items()))
    words = query_words(str(result.filters.get("query_text") or result.query))
    for rank, hit in enumerate(result.results, start=1):
        src = hit.source
        page = f" (p.{src.page})" if src.page else ""
        tags = t.paint(f" [{', '.join(map(f, src.tags))}]", "tag") if src.tags else ""
        status = f" ({f(src.status)})" if src.status else ""
        stale = t.paint(" [changed since indexed]", "warning") if src.stale else ""
        lines.append(
            f"{t.paint(f'{rank}.', 'rank')} {t.paint(f'[{hit.score:.3f}]', 'score')} "
            f"{t.paint(f(src.title), 'title')}{page} {t.paint(f'[{f(src.type)}]', 'dim')}"
            f"{tags}{status}{stale}"
        )
        line = hit_line(terminal.root, hit, rank <= LINE_NUMBERS_FOR) if terminal else None
        shown_path = t.paint(f(src.path), "path") + (t.paint(f":{line}", "line") if line else "")
        where = t.link(shown_path, src.path, line) + (
            t.paint(f" › {f(hit.section)}", "section") if hit.section else ""
        )
        lines.append(f"   {where}")
        lines.append(f"   {highlight(hit.snippet, words, t)}")
        if hit.related:
            lines.append("   related: " + ", ".join(t.link(f(r.path), r.path) for r in hit.related))
        if hit.content is not None:
            lines.append("   ---")
            lines.extend("   " + line for line in visible(hit.content).splitlines())
    if not result.results:
        lines.append("No results.")
    for warning in result.warnings:
        lines.append(t.paint(f"warning: {f(warning)}", "warning"))
    text = "\n".join(lines)
    return Styled(text) if terminal is not None else text


def _counts(result: SearchResult) -> str:
    """The header's counts, as skill-interface.md writes them ("47 matches, showing top
    10"). total_matches counts what matched (CONTRACT.md); a hybrid search also shows notes
    the vectors found near the query that match nothing, and then says so."""
    total, shown = result.total_matches, result.returned
    if shown <= total:
        return f"{total} match{'' if total == 1 else 'es'}, showing top {shown}"
    if total == 0:
        return f"no matches; showing the {shown} nearest in meaning"
    return f"{total} match{'' if total == 1 else 'es'}; showing {shown} with the nearest in meaning"


# Words too common to be worth a highlight.
_STOP = frozenset(
    "a an and are as at be by for from how i in is it my of on or the to was what when where"
    " which who why with do does did can".split()
)
# Latin words and numbers; runs of kanji, kana and hangul (CJK has no spaces to split on).
# Compiled on first use: every CLI command imports this module, few highlight.
_WORD = r"[0-9A-Za-z\u00c0-\u024f][0-9A-Za-z\u00c0-\u024f_.+#-]*"
_CJK = r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]+"


def query_words(query: str) -> list[str]:
    """What to highlight for a query, without the tokenizer (a renderer must stay light):
    its Latin words (not stop words), and its CJK runs with each of their two-character
    pieces, so 狩猟免許 also lights up 狩猟 and 免許 where they stand apart."""
    words = {lower_in_place(w).rstrip(".-") for w in re.findall(_WORD, query)}
    words = {w for w in words if len(w) > 1 and w not in _STOP}
    for run in re.findall(_CJK, query):
        words.add(run)
        words.update(run[i : i + 2] for i in range(len(run) - 1))
    return sorted(words, key=len, reverse=True)


def highlight(text: str, words: Sequence[str], terminal: Terminal) -> str:
    """`text` as one safe line with each occurrence of `words` painted as a match
    (case-insensitive; longer words first, no overlaps)."""
    if not terminal.color or not words:
        return one_line(text)
    lower = lower_in_place(text)
    taken = [False] * len(text)
    spans: list[tuple[int, int]] = []
    for word in words:
        start = lower.find(word)
        while start != -1:
            end = start + len(word)
            if not any(taken[start:end]) and _whole_word(lower, start, end, word):
                spans.append((start, end))
                taken[start:end] = [True] * (end - start)
            start = lower.find(word, start + 1)
    spans.sort()
    out, at = [], 0
    for start, end in spans:
        out.append(one_line(text[at:start]))
        out.append(terminal.paint(one_line(text[start:end]), "match"))
        at = end
    out.append(one_line(text[at:]))
    return "".join(out)


def _whole_word(lower: str, start: int, end: int, word: str) -> bool:
    """A Latin word matches at word boundaries only (`git` not inside `digital`)."""
    if not word[0].isascii():
        return True
    before = lower[start - 1] if start > 0 else " "
    after = lower[end] if end < len(lower) else " "
    return not (before.isascii() and before.isalnum()) and not (after.isascii() and after.isalnum())


_MAX_SOURCE_BYTES = 4_000_000
_HEADING = r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$"


def _read_note(root: str, stored: str) -> bytes | None:
    """The note at `stored` under `root`, read as indexing reads it: from the root down, no
    link followed on the way (a folder swapped for a link out of the root made the listing
    read the file of that name outside), the regular file itself (a FIFO or
    /proc/self/fd/0 made it wait for ever), capped. None when it cannot be read so."""
    import os
    from pathlib import Path

    from ..statedir import (
        LinkOnTheWay,
        Outside,
        SpecialFile,
        TooLarge,
        note_file,
        read_beneath,
        read_written_beneath,
    )

    if note_file(root, stored) is None:
        return None
    real_root = Path(os.path.realpath(root))
    path = real_root / stored
    try:
        try:
            return read_written_beneath([real_root], path, _MAX_SOURCE_BYTES)
        except LinkOnTheWay:  # a link inside the root: its real path must stay inside too
            return read_beneath([real_root], path, _MAX_SOURCE_BYTES)
    except (OSError, Outside, SpecialFile, TooLarge):
        return None


def hit_line(root: str | None, hit: Hit, look_up: bool = True) -> int | None:
    """The line of the note the hit's passage starts on (1-based): the one the index keeps.
    A passage indexed before the index kept it (migration m008) has none until its file is
    indexed again: then, with `look_up`, it is found in the note (`looked_up_line`)."""
    if hit.source.line is not None:
        return hit.source.line
    return looked_up_line(root, hit) if look_up else None


def looked_up_line(root: str | None, hit: Hit) -> int | None:
    """The line of the note where the hit's snippet starts (1-based), found by reading the
    file: under the hit's section heading, the first line holding the snippet's first words.
    None for PDFs and sessions, or a file that is gone or changed past recognition."""
    src = hit.source
    if root is None or src.type not in ("markdown", "text"):
        return None
    data = _read_note(root, src.path)
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    start, heading_line = 0, None
    heading = hit.section.split(" > ")[-1].strip() if hit.section else ""
    if heading:
        for i, line in enumerate(lines):
            match = re.match(_HEADING, line)
            if match and match.group(1).strip() == heading:
                start, heading_line = i, i + 1
                break
    probe = " ".join(hit.snippet.strip("…").split()[:4])[:40]
    if probe:
        for i in range(start, len(lines)):
            if probe in " ".join(lines[i].split()):
                return i + 1
        # the snippet's first words may span two lines
        first = probe.split()[0] if probe.split() else ""
        for i in range(start, len(lines)):
            if first and first in lines[i]:
                return i + 1
    return heading_line


def _flat(value: Any) -> str:
    return ",".join(map(one_line, value)) if isinstance(value, list) else one_line(value)


def table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    terminal: Terminal | None = None,
    shrink: Sequence[str] = ("tags", "title", "path"),
    drop: Sequence[str] = ("tags", "type", "date"),
) -> str:
    """An aligned table; lists are joined with commas. Widths are display columns (a
    Japanese character takes two). Given a terminal of known width, the widest of the
    `shrink` columns is narrowed (its cells cut with …) until every line fits, or they are
    all down to 8 columns; then the `drop` columns are left out in turn (a 40-column
    terminal shows id, path and title) until the lines fit. With a terminal that knows the
    index root, paths are links."""
    if not rows:
        return "(none)"
    cells = [[_flat(r.get(c, "")) if r.get(c) is not None else "" for c in columns] for r in rows]
    widths = [max(width(c), *(width(row[i]) for row in cells)) for i, c in enumerate(columns)]
    t = terminal or Terminal()
    if t.columns:
        over = sum(widths) + 2 * (len(widths) - 1) - t.columns
        floors = {list(columns).index(n): max(width(n), 8) for n in shrink if n in columns}
        while over > 0:  # narrow the widest column that may shrink, one column at a time
            room = [(widths[i] - floor, i) for i, floor in floors.items() if widths[i] > floor]
            if not room:
                break
            widths[max(room)[1]] -= 1
            over -= 1
        droppable = [c for c in drop if c in columns]
        if over > 0 and droppable:
            kept = [c for c in columns if c != droppable[0]]
            return table(rows, kept, terminal, shrink, drop)
    head = "  ".join(t.paint(pad(c, w), "heading") for c, w in zip(columns, widths, strict=True))
    links = list(columns).index("path") if "path" in columns and t.root else None
    raw_paths = [str(r.get("path") or "") for r in rows]

    def cell(value: str, w: int, i: int, row: int) -> str:
        shown = fit(value, w)
        if i == links and raw_paths[row]:  # a clickable path (OSC 8), when links are on
            shown = t.link(shown, raw_paths[row])
        return pad(shown, w)

    body = [
        "  ".join(
            cell(v, w, i, n) for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for n, row in enumerate(cells)
    ]
    text = "\n".join([head.rstrip() if not t.color else head, *body])
    return Styled(text) if terminal is not None else text


# `tsm status` keys that only a server store fills (store/catalog.py's IndexStatus).
_SERVER_STATUS_KEYS = ("store_url", "server_version", "pgvector_version")


def status(data: Mapping[str, Any], terminal: Terminal | None = None) -> str:
    """`tsm status` as text: `mapping`, without the server's lines for an SQLite index
    (the JSON keeps them, as null)."""
    if data.get("store") == "sqlite":
        data = {k: v for k, v in data.items() if k not in _SERVER_STATUS_KEYS}
    return mapping(data, terminal=terminal)


def mapping(data: Mapping[str, Any], indent: int = 0, terminal: Terminal | None = None) -> str:
    """Nested key: value lines for status/info/doctor. With a `terminal` the values read as
    words: sizes in MB, times as local dates, durations in minutes and hours, booleans as
    yes/no, keys without underscores, and the key column aligned."""
    lines = []
    pad_ = "  " * indent
    human = terminal is not None
    t = terminal or Terminal()
    label = _label if human else one_line
    scalars = [k for k, v in data.items() if not _nested(v)]
    key_width = max((width(label(k)) for k in scalars), default=0) if human else 0
    for key, value in data.items():
        name = label(key)
        if isinstance(value, Mapping):
            lines.append(f"{pad_}{t.paint(name + ':', 'heading')}")
            lines.append(mapping(value, indent + 1, terminal))
        elif _nested(value):
            lines.append(f"{pad_}{t.paint(name + ':', 'heading')}")
            for item in value:
                lines.append(
                    f"{pad_}  - "
                    + ", ".join(
                        f"{label(k)}={_value(k, v) if human else _flat(v)}" for k, v in item.items()
                    )
                )
        elif human:
            lines.append(f"{pad_}{pad(name + ':', key_width + 1)} {_value(key, value, t)}")
        else:
            lines.append(f"{pad_}{name}: {_flat(value) if value is not None else '-'}")
    text = "\n".join(lines)
    return Styled(text) if human and indent == 0 else text


def _nested(value: Any) -> bool:
    return isinstance(value, Mapping) or (
        isinstance(value, list) and bool(value) and isinstance(value[0], Mapping)
    )


def _label(key: object) -> str:
    """`db_size_bytes` → `db size` (the value says MB), `uptime_s` → `uptime`."""
    name = re.sub(r"_(bytes|s|seconds)$", "", one_line(key))
    return name.replace("_", " ")


_MB = 1_000_000
_TIME_KEYS = ("_at", "created", "updated", "last_change", "mtime")


def _value(key: object, value: Any, terminal: Terminal | None = None) -> str:
    """One status/info value in words (see `mapping`)."""
    t = terminal or Terminal()
    name = str(key)
    if value is None:
        return t.paint("-", "dim")
    if isinstance(value, bool):
        return t.paint("yes", "good") if value else "no"
    if isinstance(value, int | float) and name.endswith("_bytes"):
        return f"{value / _MB:.1f} MB" if value >= 10 * _MB else f"{value / _MB:.2f} MB"
    if isinstance(value, int) and not isinstance(value, bool) and name == "size":
        # `tsm info`'s file size: a note is bytes or kB, where "0.00 MB" would say nothing
        if value < 1000:
            return f"{value} bytes"
        return f"{value / 1000:.1f} kB" if value < _MB else f"{value / _MB:.2f} MB"
    if isinstance(value, int | float) and (name.endswith("_s") or name.endswith("_seconds")):
        return _duration(float(value))
    if isinstance(value, float) and name.endswith("_rate"):
        return f"{value:.1f} chunks/s"
    if isinstance(value, str) and name.endswith(_TIME_KEYS):
        return _when(value)
    if isinstance(value, list) and not value:
        return t.paint("none", "dim")
    if name in ("warnings", "errors") and isinstance(value, list):
        return t.paint(_flat(value), "warning")
    if name == "state" and isinstance(value, str):
        good = value in ("running", "ready", "watching", "idle", "ok")
        return t.paint(one_line(value), "good" if good else "warning")
    return _flat(value)


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.0f} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"


def _when(text: str) -> str:
    """An ISO time as a local date and time to the second; anything else as it is."""
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return one_line(text)
    if len(text) <= 10:  # a date alone
        return moment.date().isoformat()
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S")
