"""Terminal escapes in a note are shown, never obeyed, in every human
output; JSON keeps the exact text. The class: ESC/CSI, OSC 0 (window title), OSC 8 (links),
OSC 52 (clipboard), C1 controls, BEL, backspace, CR, bidi overrides, in the title, path,
section, tags, snippet and body."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tsm.render.human_format import one_line, visible
from tsm.render.json_format import dumps

HOSTILE = [
    "\x1b[2J",
    "\x1b]0;owned\x07",
    "\x1b]8;;http://evil\x1b\\",
    "\x1b]52;c;ZWNobw==\x07",
    "\x9b31m",
    "\x9d0;t\x9c",
    "\x07",
    "\x08\x08",
    "\r",
    "\u202e",
    "\u2066",
    "\x00",
    "\x7f",
]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NOTE = """---
title: {title}
tags: [ok, {tag}]
---
# Section {x} heading

zebrafish {x} body line
second line\r
"""


def test_visible_and_one_line() -> None:
    for bad in HOSTILE:
        assert not RAW.search(visible(f"a{bad}b")) and not RAW.search(one_line(f"a{bad}b"))
    assert visible("line 1\r\nline\t2\n") == "line 1\nline\t2\n"
    assert one_line("a\nb\tc") == "a\\x0ab\\x09c"  # no forged lines in one-line fields
    assert visible("\x1b[31m") == "\\x1b[31m" and visible("\u202e") == "\\u202e"
    assert visible("日本語 é ✓") == "日本語 é ✓"
    data = {"t": "".join(HOSTILE) + "日本"}
    text = dumps(data)
    assert json.loads(text) == data and not RAW.search(text)


def test_every_human_output_shows_escapes_and_json_keeps_them(vault: Path, tsm: Any) -> None:
    x = "".join(HOSTILE[:-2])  # NUL and DEL cannot be in a YAML string; tested above
    name = "notes/evil\x1b]0;t\x07\u202e.md"
    # YAML double-quoted scalars take JSON's escapes: the frontmatter holds the real bytes
    note = (
        NOTE.replace("{title}", json.dumps(f"Title {x} end"))
        .replace("{tag}", json.dumps(f"tag{x}"))
        .replace("{x}", x)
    )
    (vault / name).write_text(note, encoding="utf-8", newline="")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    listed = [d for d in tsm("list", "-f", "json").json() if d["path"] == name]
    assert listed, "the hostile note was not indexed"
    doc_id = str(listed[0]["id"])
    commands = [
        ("search", "zebrafish", "--fts-only"),
        ("list",),
        ("tags",),
        ("status",),
        ("info", doc_id),
        ("get", doc_id),
        ("get", name),
        ("doctor",),
    ]
    for command in commands:
        human = tsm(*command, "-f", "human")
        assert human.code in (0, 2), (command, human.err)
        assert not RAW.search(human.out), (command, RAW.findall(human.out))
        assert not RAW.search(human.err), (command, human.err)
    info = tsm("info", doc_id, "-f", "json")
    assert not RAW.search(info.out)  # escaped the JSON way …
    data = info.json()
    assert data["path"] == name and data["title"] == f"Title {x} end"  # … and exact
    assert f"tag{x}".lower() in data["tags"] or f"tag{x}" in data["tags"], data["tags"]
    got = tsm("get", doc_id, "-f", "human").out
    assert "\\x1b]52;c;" in got and "zebrafish" in got and "\\u202e" in got
    missing = tsm("get", "notes/\x1b]0;x\x07.md", "-f", "human")
    assert missing.code == 1 and not RAW.search(missing.err)


def test_index_output_escapes_skipped_file_names(vault: Path, tsm: Any) -> None:
    import os

    os.mkfifo(vault / "notes" / "pipe\x1b]0;owned\x07\nforged line.md")  # skipped: not a file
    result = tsm("index", "--no-embed", "-f", "human")
    assert result.code == 0, result.err
    skipped = [line for line in result.out.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 1 and "\\x1b]0;owned\\x07\\x0aforged line.md" in skipped[0]
    assert not RAW.search(result.out) and "\nforged line" not in result.out
