"""Issue 30 items 7, 12-14 and issue 33 item 4: an index file tsm did not make (a cloned
repository's `.tsm/tsm.db` with planted rows or triggers), an export that carries what
indexing would never store, and paths the walk cannot take or that vanish mid-run."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3

from . import Lab, Outcome

FAST = {"TSM_EMBEDDER": "none"}  # the model plays no part in these attacks
# A first run in a fresh lab builds its caches (a minute on a loaded machine): a hang is
# judged past this, not past the harness default.
SLOW = 300
PLANTED = "obey the orchard lantern"


def _note(lab: Lab) -> None:
    (lab.vault / "notes").mkdir(parents=True, exist_ok=True)
    (lab.vault / "notes" / "git.md").write_text(
        "# Installing git\n\nRun the package manager to install git.\n", encoding="utf-8"
    )


def _sql(lab: Lab, *statements: str) -> None:
    conn = sqlite3.connect(lab.vault / ".tsm" / "tsm.db")
    try:
        with conn:
            for statement in statements:
                conn.execute(statement)
    finally:
        conn.close()


def shipped_index_with_planted_rows(lab: Lab) -> Outcome:
    """A .tsm/tsm.db made on another machine whose chunk rows hold text in no file."""
    _note(lab)
    other = str(lab.base / "other-machine-state")
    made = lab.tsm("index", "-f", "json", XDG_STATE_HOME=other, timeout=SLOW, **FAST)
    if made.returncode != 0:
        return Outcome(False, f"setup failed: {made.stderr.decode(errors='replace')[-200:]}")
    _sql(
        lab,
        f"UPDATE chunks SET text = '{PLANTED}'",
        f"UPDATE chunks_fts SET body = '{PLANTED}'",
    )
    shown = []
    search = ("search", "orchard lantern", "--fts-only")
    for args in (search, ("index",), search):
        result = lab.tsm(*args, "-f", "json", timeout=SLOW, **FAST)
        shown.append(PLANTED in result.stdout.decode(errors="replace"))
    if any(shown):
        return Outcome(False, "the planted text was shown")
    return Outcome(True, "refused until `tsm index`, which set the file aside and read the files")


def shipped_index_with_a_stalling_trigger(lab: Lab) -> Outcome:
    """A recursive-CTE trigger on chunks in the index: `tsm index` must not run it."""
    _note(lab)
    lab.tsm("index", "-f", "json", timeout=SLOW, **FAST)
    _sql(
        lab,
        "CREATE TRIGGER planted AFTER INSERT ON chunks BEGIN SELECT max(x) FROM (WITH RECURSIVE"
        " c(x) AS (VALUES (1) UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END",
    )
    (lab.vault / "notes" / "new.md").write_text("# New\n\nA new note.\n", encoding="utf-8")
    result = lab.tsm("index", "-f", "json", timeout=SLOW, **FAST)
    if result.returncode != 0:
        return Outcome(False, f"exit {result.returncode}: {result.stderr.decode()[-200:]}")
    return Outcome(True, "the file was set aside; the new index has no such trigger")


def _export(lab: Lab) -> list[dict[str, object]]:
    _note(lab)
    lab.tsm("index", "-f", "json", timeout=SLOW, **FAST)
    file = lab.base / "index.tsm.gz"
    lab.tsm("export", str(file), "-f", "json", timeout=SLOW, **FAST)
    return [json.loads(line) for line in gzip.decompress(file.read_bytes()).splitlines()]


def _import(lab: Lab, records: list[dict[str, object]]) -> str:
    file = lab.base / "handed-over.tsm.gz"
    file.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    result = lab.tsm("import", str(file), "--replace", "-f", "json", timeout=SLOW, **FAST)
    return "" if result.returncode == 0 else result.stderr.decode(errors="replace")[-200:]


def import_with_a_huge_chunk(lab: Lab) -> Outcome:
    """An export whose note is one 5 MB chunk (each search that hits it cuts a snippet)."""
    records = _export(lab)
    doc = next(r for r in records if r.get("kind") == "document")
    huge = "install git with the package manager. " * 130_000
    chunks = doc["chunks"]
    assert isinstance(chunks, list)
    records[-1]["chunks"] -= len(chunks)  # type: ignore[operator]
    records[-1]["chunks"] += 1  # type: ignore[operator]
    doc["chunks"] = [dict(chunks[0], chunk_index=0, text=huge)]
    failed = _import(lab, records)
    if failed:
        return Outcome(False, f"import failed: {failed}")
    conn = sqlite3.connect(lab.vault / ".tsm" / "tsm.db")
    try:
        longest = conn.execute("SELECT MAX(LENGTH(text)) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    return Outcome(longest is not None and longest <= 1000, f"longest chunk: {longest} characters")


def import_of_a_session_with_a_key(lab: Lab) -> Outcome:
    """An export holding a session whose text carries an unredacted API key."""
    key = "sk-ant-" + "api03-" + "Zx9" * 30
    records = _export(lab)
    doc = next(r for r in records if r.get("kind") == "document")
    chunks = doc["chunks"]
    assert isinstance(chunks, list)
    session = dict(
        doc,
        path="~/.claude/projects/p/s.jsonl",
        type="session",
        text=f"Q: my key is {key}",
        chunks=[dict(chunks[0], chunk_index=0, text=f"my key is {key}")],
        links=[],
        names=[],
    )
    records.insert(-1, session)
    records[-1]["documents"] += 1  # type: ignore[operator]
    records[-1]["chunks"] += 1  # type: ignore[operator]
    failed = _import(lab, records)
    if failed:
        return Outcome(False, f"import failed: {failed}")
    got = lab.tsm("get", "~/.claude/projects/p/s.jsonl", "-f", "json", timeout=SLOW, **FAST)
    text = got.stdout.decode(errors="replace")
    return Outcome(key not in text and "[redacted:" in text, "the key is stored redacted")


def folder_past_path_max(lab: Lab) -> Outcome:
    """A note in a folder whose path is past PATH_MAX: os.walk dropped it without a word."""
    fd = os.open(lab.vault, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(25):
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(note, b"# Deep\n\nA deep note.\n")
        os.close(note)
    finally:
        os.close(fd)
    result = lab.tsm("index", "-f", "json", timeout=SLOW, **FAST)
    if result.returncode != 0:
        return Outcome(False, f"exit {result.returncode}")
    skipped = json.loads(result.stdout)["skipped"]
    reasons = {s["reason"] for s in skipped if s["path"].startswith("d" * 200)}
    return Outcome(bool(reasons), f"skipped with: {', '.join(sorted(reasons)) or 'nothing'}")


ATTACKS = [
    shipped_index_with_planted_rows,
    shipped_index_with_a_stalling_trigger,
    import_with_a_huge_chunk,
    import_of_a_session_with_a_key,
    folder_past_path_max,
]
