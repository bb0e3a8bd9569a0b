"""Issue 14 items 8 (rebuild), 9, 10, 11, 13: the index file itself under attack or bad luck
(a rebuild on a full disk, a zero-byte or garbage DB), user input reported as system errors,
and a note whose text drives the terminal."""

from __future__ import annotations

import json
import re
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

from . import REPO, Lab, Outcome

FAST = {"TSM_EMBEDDER": "none"}  # the model plays no part in these attacks
TRANSCRIPT = REPO / "tests" / "fixtures" / "sessions" / "sample-session.jsonl"
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _notes(lab: Lab, count: int = 20) -> Path:
    notes = lab.vault / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (notes / f"note-{i}.md").write_text(
            f"# Note {i}\n\nhunting licence renewal paperwork, item {i}. " * 20, encoding="utf-8"
        )
    result = lab.tsm("index", "-f", "json", **FAST)
    assert result.returncode == 0, result.stderr
    return lab.vault / ".tsm" / "tsm.db"


def _rows(db: Path) -> tuple[str, int]:
    conn = sqlite3.connect(db)
    try:
        return (
            conn.execute("PRAGMA quick_check").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
        )
    finally:
        conn.close()


def _error(result: subprocess.CompletedProcess[bytes]) -> str:
    return (
        result.stderr.decode(errors="replace").strip().splitlines()[-1:][0]
        if result.stderr.strip()
        else ""
    )


def rebuild_with_sessions_outside_the_root(lab: Lab) -> Outcome:
    """Transcripts ingested from ~/.claude (one since deleted), then `rebuild --apply`."""
    _notes(lab, 3)
    folder = lab.claude_project
    for name in ("kept.jsonl", "deleted.jsonl"):
        turn = {
            "type": "user",
            "uuid": name,
            "timestamp": "2026-03-11T09:00:00.000Z",
            "message": {"role": "user", "content": f"What is in {name}?"},
        }
        (folder / name).write_text(
            TRANSCRIPT.read_text(encoding="utf-8") + json.dumps(turn) + "\n", encoding="utf-8"
        )
        lab.tsm("ingest-session", str(folder / name), "-f", "json", **FAST)
    (folder / "deleted.jsonl").unlink()
    rebuilt = lab.tsm("rebuild", "--apply", "-f", "json", **FAST)
    if rebuilt.returncode != 0:
        return Outcome(False, f"exit {rebuilt.returncode}: {_error(rebuilt)}")
    listed = json.loads(lab.tsm("list", "--type", "session", "-f", "json", **FAST).stdout)
    names = sorted(Path(d["path"]).name for d in listed)
    ok = names == ["deleted.jsonl", "kept.jsonl"]
    return Outcome(ok, f"sessions after rebuild: {names or 'none'}")


def rebuild_with_too_little_disk(lab: Lab) -> Outcome:
    """`rebuild --apply` where no file may grow past half the DB (RLIMIT_FSIZE)."""
    db = _notes(lab, 200)
    before = _rows(db)
    limit = db.stat().st_size // 2

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        [sys.executable, "-m", "tsm", "rebuild", "--apply", "-f", "json"],
        cwd=lab.vault,
        env=lab.environ(**FAST),
        capture_output=True,
        timeout=300,
        preexec_fn=small_disk,
    )
    error = json.loads(_error(result) or "{}")
    after = _rows(db)
    search = lab.tsm("search", "hunting licence", "--fts-only", "-f", "json", **FAST)
    ok = (
        result.returncode == 2
        and after == before
        and error.get("backup") == str(db)
        and search.returncode == 0
        and b"Traceback" not in result.stderr
        and not list(db.parent.glob("tsm.db.rebuild*"))
    )
    return Outcome(
        ok,
        f"exit {result.returncode}, {after[1]} of {before[1]} documents kept, "
        f"backup named: {error.get('backup') == str(db)}",
    )


def _broken_db(lab: Lab, content: bytes, label: str) -> Outcome:
    db = _notes(lab, 3)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(content(db.read_bytes()) if callable(content) else content)
    codes = {}
    for command in (("search", "hunting"), ("list",), ("status",), ("doctor",)):
        result = lab.tsm(*command, "-f", "json", **FAST)
        message = _error(result)
        codes[command[0]] = result.returncode
        if result.returncode != 2 or ("rebuild" not in message and command[0] != "doctor"):
            return Outcome(
                False, f"{label}: `{command[0]}` exit {result.returncode}: {message[:90]}"
            )
    fixed = lab.tsm("rebuild", "--apply", "-f", "json", **FAST)
    return Outcome(
        fixed.returncode == 0,
        f"{label}: search/list/status/doctor exit 2 naming "
        f"the file; rebuild exit {fixed.returncode}",
    )


def zero_byte_db(lab: Lab) -> Outcome:
    """The DB truncated to 0 bytes (a full disk, a bad copy)."""
    return _broken_db(lab, b"", "0 bytes")


def garbage_db(lab: Lab) -> Outcome:
    """The DB overwritten with garbage, and one cut to a third of its size."""
    first = _broken_db(lab, b"\x00garbage\xff" * 4000, "garbage")
    if not first.ok:
        return first
    second = _broken_db(lab, lambda data: data[: len(data) // 3], "truncated")
    return Outcome(second.ok, f"{first.detail}; {second.detail}")


def huge_id(lab: Lab) -> Outcome:
    """Ids and numbers out of range or of the wrong kind: get/info/search -k/mcp --port."""
    _notes(lab, 2)
    huge = "99999999999999999999999"
    cases = [
        ("get", huge),
        ("info", huge),
        ("get", "²"),
        ("get", "9" * 5000),
        ("search", "x", "-k", huge),
        ("search", "x", "-k", "-1"),
        ("search", "x", "-k", "1.5"),
        ("search", "x", "--include-content", huge),
        ("mcp", "--http", "--port", huge),
    ]
    for case in cases:
        result = lab.tsm(*case, "-f", "json", **FAST)
        if result.returncode != 1:
            return Outcome(
                False,
                f"`{' '.join(c[:12] for c in case)}` exit "
                f"{result.returncode}: {_error(result)[:80]}",
            )
    return Outcome(True, f"{len(cases)} cases, each a user error (exit 1)")


def escapes_in_a_title(lab: Lab) -> Outcome:
    """A note whose title, name, heading and body carry ESC/CSI, OSC 0/8/52, C1, BEL, BS, CR
    and bidi overrides, shown by every human output."""
    hostile = (
        "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"
        "\x1b]52;c;cm0gLXJmIH4=\x07\x9b31m\x07\x08\r\u202e"
    )
    notes = lab.vault / "notes"
    notes.mkdir()
    name = "evil\x1b]0;t\x07.md"
    (notes / name).write_text(
        f"---\ntitle: {json.dumps('T' + hostile)}\ntags: "
        f"[{json.dumps('t' + hostile)}]\n---\n# H{hostile}\n\n"
        f"zebrafish {hostile}\n",
        encoding="utf-8",
        newline="",
    )
    lab.tsm("index", "-f", "json", **FAST)
    listed = json.loads(lab.tsm("list", "-f", "json", **FAST).stdout)
    if not listed:
        return Outcome(False, "the note was not indexed")
    doc = str(listed[0]["id"])
    for command in (
        ("search", "zebrafish", "--fts-only"),
        ("list",),
        ("tags",),
        ("status",),
        ("info", doc),
        ("get", doc),
    ):
        out = lab.tsm(*command, "-f", "human", **FAST)
        raw = RAW_CONTROLS.findall(out.stdout.decode() + out.stderr.decode())
        if raw:
            return Outcome(False, f"`{command[0]}` printed {len(raw)} raw control characters")
    exact = json.loads(lab.tsm("info", doc, "-f", "json", **FAST).stdout)["title"]
    return Outcome(exact == "T" + hostile, "every human output shows them escaped; JSON exact")


ATTACKS = [
    rebuild_with_sessions_outside_the_root,
    rebuild_with_too_little_disk,
    zero_byte_db,
    garbage_db,
    huge_id,
    escapes_in_a_title,
]
