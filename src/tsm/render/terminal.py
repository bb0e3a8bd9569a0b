"""What the terminal that reads human output can do, and how to dress text for it: colour
(SGR), clickable links (OSC 8), display widths of CJK text (wcwidth).

Decided from the reader's environment, which for a search the daemon answers is the client's
(cli/entry.py forwards NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE, TERM and COLUMNS):

- NO_COLOR set and non-empty: no colour and no links, whatever else says (no-color.org);
- FORCE_COLOR or CLICOLOR_FORCE set, non-empty and not "0": colour and links even when
  stdout is not a terminal (a pager, `script`, tests);
- otherwise only on a terminal, and not when TERM is "dumb".

Links name the file as `file://HOST/absolute/path#LINE` (the form kitty, WezTerm and iTerm2
open at the line; others open the file); TSM_HYPERLINK_FORMAT replaces it, with `{path}`,
`{line}` and `{host}` (e.g. `vscode://file{path}:{line}`), and `none` turns links off.

Only text already made safe (human_format.one_line / visible) is dressed: the escapes added
here are ours, never a note's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from ..statedir import note_file

DEFAULT_LINK_FORMAT = "file://{host}{path}#{line}"
RESET = "\x1b[0m"
# SGR parameters by role; one place to change the palette.
ROLES = {
    "rank": "1",  # bold
    "title": "1",
    "score": "2",  # dim
    "path": "36",  # cyan
    "line": "2;36",
    "section": "2",
    "match": "1;33",  # bold yellow
    "tag": "35",  # magenta
    "warning": "33",
    "heading": "1",
    "good": "32",
    "bad": "31",
    "dim": "2",
}


@dataclass(frozen=True)
class Terminal:
    """How human output is dressed: `color` (SGR and OSC 8), `columns` (None: unknown, no
    fitting), the index root that relative paths are under (for links and line numbers)."""

    color: bool = False
    columns: int | None = None
    root: str | None = None
    link_format: str | None = None  # None: no links
    host: str = ""

    @classmethod
    def detect(
        cls, environ: Mapping[str, str] | None = None, tty: bool | None = None, root: object = None
    ) -> Terminal:
        """The terminal of this process's stdout (or the forwarded client's, when given)."""
        import sys

        env = os.environ if environ is None else environ
        if tty is None:
            try:
                tty = sys.stdout.isatty()
            except (AttributeError, ValueError):
                tty = False
        color = wants_color(env, tty)
        link_format = env.get("TSM_HYPERLINK_FORMAT") or DEFAULT_LINK_FORMAT
        if not _valid_format(link_format):
            link_format = DEFAULT_LINK_FORMAT  # a typo must not cost the user their results
        return cls(
            color=color,
            columns=columns(env, tty if environ is None else False),
            root=str(root) if root is not None else None,
            link_format=link_format if color and link_format != "none" else None,
            host=_hostname() if color else "",
        )

    def paint(self, text: str, role: str) -> str:
        """`text` in the role's colour, or as it is without colour."""
        if not self.color or not text:
            return text
        return f"\x1b[{ROLES[role]}m{text}{RESET}"

    def link(self, text: str, path: str, line: int | None = None) -> str:
        """`text` as an OSC 8 link to `path` (relative to the root) at `line`."""
        if self.link_format is None or self.root is None:
            return text
        absolute = note_file(self.root, path)
        if absolute is None:  # a damaged index's path: no link out of the root
            return text
        fmt = self.link_format
        if line is None:
            fmt = fmt.replace("#{line}", "").replace(":{line}", "")
        uri = fmt.format(
            path=quote(absolute, safe="/"), line=line or 1, host=quote(self.host, safe="")
        )
        uri = "".join(c for c in uri if 0x20 < ord(c) < 0x7F)  # no escape inside the link
        return f"\x1b]8;;{uri}\x1b\\{text}\x1b]8;;\x1b\\"


def wants_color(environ: Mapping[str, str], tty: bool) -> bool:
    if environ.get("NO_COLOR"):
        return False
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE"):
        value = environ.get(name)
        if value and value != "0":
            return True
    return tty and environ.get("TERM") != "dumb"


def columns(environ: Mapping[str, str], ask_terminal: bool) -> int | None:
    """COLUMNS when it is a positive number, else the size of this process's terminal when
    asked (never for a daemon answering a client), else None."""
    value = environ.get("COLUMNS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    if ask_terminal:
        try:
            return os.get_terminal_size(1).columns or None
        except OSError:
            return None
    return None


def _valid_format(fmt: str) -> bool:
    if fmt == "none":
        return True
    try:
        fmt.format(path="/p", line=1, host="h")
    except (KeyError, IndexError, ValueError, AttributeError):
        return False
    return True


def _hostname() -> str:
    import socket

    try:
        return socket.gethostname()
    except OSError:
        return ""


# -- display widths (wcwidth: East Asian wide characters take two columns) ------------------
def width(text: str) -> int:
    """Columns `text` takes on a terminal; escape sequences take none."""
    if text.isascii() and text.isprintable():  # the common case, without loading wcwidth
        return len(text)
    import wcwidth

    return int(wcwidth.width(text))


def fit(text: str, columns: int) -> str:
    """`text` cut to at most `columns` columns, ending with … when cut."""
    if columns <= 0:
        return ""
    if width(text) <= columns:
        return text
    import wcwidth

    return str(wcwidth.clip(text, 0, columns - 1)).rstrip() + "…"


def pad(text: str, columns: int) -> str:
    """`text` followed by spaces up to `columns` columns."""
    return text + " " * max(0, columns - width(text))
