"""`tsm rebuild --apply`: every transcript the old index knew comes
back (ingested again from where it is, or kept from the old index when it is gone), and
the rebuild is atomic: a full disk leaves the old index exactly as it was, and the output
always names where the old index is."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from claude_home import project_dir

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"


def counts(db: Path) -> tuple[str, int, int]:
    conn = sqlite3.connect(db)
    try:
        return (
            conn.execute("PRAGMA quick_check").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0],
        )
    finally:
        conn.close()


def sessions(tsm: Any) -> list[str]:
    result = tsm("list", "--type", "session", "-f", "json")
    assert result.code == 0, result.err
    return sorted(d["path"] for d in result.json())


def test_rebuild_keeps_transcripts_outside_the_root(
    indexed: Path, tsm: Any, tmp_path: Path
) -> None:
    elsewhere = project_dir(indexed)  # Claude Code's folder for this root, outside it
    kept, gone = elsewhere / "kept.jsonl", elsewhere / "gone.jsonl"
    shutil.copy(FIXTURE, kept)
    gone.write_text(
        FIXTURE.read_text()
        + json.dumps(
            {
                "type": "user",
                "uuid": "z1",
                "timestamp": "2026-03-11T09:00:00.000Z",
                "message": {"role": "user", "content": "Where did I note the zebrafish feeder?"},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    for path in (kept, gone):
        assert tsm("ingest-session", str(path), "-f", "json").code == 0
    before = sessions(tsm)
    assert len(before) == 2
    gone.unlink()  # Claude Code deletes old transcripts; their indexed turns must stay

    result = tsm("rebuild", "--apply", "-f", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert sessions(tsm) == before
    assert data["sessions"]["known"] == 2
    assert [Path(p).name for p in data["sessions"]["reingested"]] == ["kept.jsonl"]
    [kept_row] = data["sessions"]["kept_from_old_index"]
    assert kept_row["path"].endswith("gone.jsonl") and "gone" in kept_row["reason"]
    hit = tsm("search", "zebrafish feeder", "--fts-only", "-f", "json").json()["results"]
    assert hit and hit[0]["source"]["path"].endswith("gone.jsonl")
    backup = Path(data["backup"])
    assert (
        backup.parent == indexed / ".tsm"
        and counts(backup)[1] == counts(indexed / ".tsm" / "tsm.db")[1]
    )

    human = tsm("rebuild", "--apply", "-f", "human")
    assert human.code == 0, human.err
    assert "backup at " in human.out and "kept from the old index: " in human.out
    assert sessions(tsm) == before  # and again, from the rebuilt index


def test_an_untrusted_roots_old_index_names_no_transcript_to_read(
    tmp_path: Path, tsm: Any, monkeypatch: Any
) -> None:
    """A cloned repository can ship .tsm/tsm.db: its session keys must not make a rebuild in
    a root the user never trusted read a transcript outside the root (another project's
    conversation into this index). Its old rows are kept, as for one that is gone."""
    monkeypatch.delenv("TSM_INDEX_ROOT", raising=False)
    maker = tmp_path / "maker"  # where the planted index was made, trusting its own root
    (maker / "notes").mkdir(parents=True)
    other = project_dir(maker) / "secret.jsonl"  # another project's, to the clone
    shutil.copy(FIXTURE, other)
    (maker / "notes" / "a.md").write_text("# Widgets\n\nwidgets are parts\n", encoding="utf-8")
    made = tsm("ingest-session", str(other), "-f", "json", env={"TSM_INDEX_ROOT": str(maker)})
    assert made.code == 0, made.err
    clone = tmp_path / "clone"
    shutil.copytree(maker, clone)
    shutil.rmtree(maker)
    # the transcript as it is now: what a rebuild that reads it again would index
    other.write_text(
        FIXTURE.read_text(encoding="utf-8").replace("LoRa", "ZQCANARY"), encoding="utf-8"
    )

    result = tsm("rebuild", "--apply", "-f", "json", cwd=clone)
    assert result.code == 0, result.err
    data = result.json()["sessions"]
    assert data["reingested"] == []
    [kept] = data["kept_from_old_index"]
    assert kept["path"] == str(other) and "not trusted" in kept["reason"], kept
    found = tsm("search", "ZQCANARY", "--fts-only", "-f", "json", cwd=clone)
    assert found.code == 0 and found.json()["results"] == [], found.out
    assert tsm("search", "LoRa", "--fts-only", "-f", "json", cwd=clone).json()["results"]

    # Trusted, the clone still reads no transcript of another project's (ingest-session's
    # rule, which the rebuild goes through): the old rows stay, with the reason.
    trusted = tsm("rebuild", "--apply", "-f", "json", env={"TSM_INDEX_ROOT": str(clone)})
    assert trusted.code == 0, trusted.err
    data = trusted.json()["sessions"]
    assert data["reingested"] == []
    [kept] = data["kept_from_old_index"]
    assert "is not a transcript of this index root" in kept["reason"], kept


def run_with_file_size_limit(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI with RLIMIT_FSIZE: no file it writes may grow past `limit` bytes, as on a
    disk with only that much room left (Python ignores SIGXFSZ, so writes fail with EFBIG)."""

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "tsm", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        preexec_fn=limit_files,
        timeout=300,
    )


def test_rebuild_without_room_keeps_the_old_index(indexed: Path, tsm: Any) -> None:
    db = indexed / ".tsm" / "tsm.db"
    assert tsm("search", "install git", "-f", "json").code == 0
    before = counts(db)
    size = db.stat().st_size
    for fmt in ("json", "human"):
        proc = run_with_file_size_limit(size // 2, "rebuild", "--apply", "-f", fmt)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        if fmt == "json":
            error = json.loads(proc.stderr.strip().splitlines()[-1])
            assert error["kind"] == "system_error" and error["backup"] == str(db)
            assert error["index_unchanged"] is True
            message = error["error"]
        else:
            message = proc.stderr
        assert message.count("rebuild failed: cannot write") == 1, message
        assert "disk may be full" in message and f"the index at {db} is as it was" in message
        assert counts(db) == before  # same rows, and sound
        assert not list(db.parent.glob("tsm.db.rebuild*"))  # the half-built file is gone
        assert not list(db.parent.glob("tsm.db.bak-*"))
    search = tsm("search", "install git", "-f", "json")
    assert (
        search.code == 0 and search.json()["results"][0]["source"]["path"] == "notes/git-install.md"
    )
    assert tsm("rebuild", "--apply", "-f", "json").code == 0  # with room, it works


def test_a_killed_rebuild_is_reported_and_cleaned_up(indexed: Path, tsm: Any) -> None:
    db = indexed / ".tsm" / "tsm.db"
    left = db.with_name("tsm.db.rebuild")
    left.write_bytes(b"half a database")  # what a rebuild killed by SIGKILL leaves
    doctor = tsm("doctor", "-f", "json")
    assert doctor.code == 0, doctor.err  # a warning, not an error
    items = [i for s in doctor.json()["sections"] for i in s["items"]]
    assert any(i["name"] == "interrupted rebuild" and i["status"] == "warn" for i in items)
    assert tsm("rebuild", "--apply", "-f", "json").code == 0
    assert not left.exists()


def test_rebuild_of_an_empty_or_garbage_db(vault: Path, tsm: Any) -> None:
    state = vault / ".tsm"
    state.mkdir()
    for content in (b"", b"not a database at all " * 50):
        (state / "tsm.db").write_bytes(content)
        result = tsm("rebuild", "--apply", "-f", "json")
        assert result.code == 0, result.err
        data = result.json()
        assert data["indexed"] > 5 and any("could not be read" in w for w in data["warnings"])
        assert Path(data["backup"]).read_bytes() == content  # the broken file, kept as it was
        assert tsm("search", "install git", "-f", "json").code == 0
        for backup in state.glob("tsm.db.bak-*"):
            backup.unlink()


def test_an_interrupted_rebuild_keeps_the_old_index(vault: Path, tsm: Any) -> None:
    for i in range(300):
        (vault / "notes" / f"bulk-{i}.md").write_text(f"# Bulk {i}\n\nfiller text {i}\n" * 30)
    env = {**os.environ, "TSM_EMBEDDER": "none"}
    assert tsm("index", "-f", "json", env=env).code == 0
    db = vault / ".tsm" / "tsm.db"
    before = counts(db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "rebuild", "--apply", "-f", "json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    building = db.with_name("tsm.db.rebuild")
    while not building.exists() and proc.poll() is None:
        pass  # the new index is being built: stop it now
    proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err  # the user stopped it: "interrupted"
    error = json.loads(err.strip().splitlines()[-1])
    assert "interrupted" in error["error"] and error["backup"] == str(db)
    assert counts(db) == before and not building.exists()


def test_rebuild_refuses_to_swap_under_an_open_connection(indexed: Path, tsm: Any) -> None:
    db = indexed / ".tsm" / "tsm.db"
    before = counts(db)
    reader = sqlite3.connect(db)  # as a running MCP server holds it
    try:
        reader.execute("SELECT COUNT(*) FROM documents").fetchone()
        result = tsm("rebuild", "--apply", "-f", "json")
    finally:
        reader.close()
    assert result.code == 2, result.err
    assert "another process has the index" in result.error()["error"]
    assert counts(db) == before and not db.with_name("tsm.db.rebuild").exists()
    assert not list(db.parent.glob("tsm.db.bak-*"))
