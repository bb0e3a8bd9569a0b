"""`tsm ingest-session` on a realistic Claude Code transcript, and session folders picked up
by `tsm index`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"


def ingest(tsm: Any, path: Path) -> dict:
    result = tsm("ingest-session", str(path), "-f", "json")
    assert result.code == 0, result.err
    return result.json()


def test_ingest_skips_noise_and_dates_turns(vault: Path, tsm: Any, tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    first = ingest(tsm, transcript)
    assert first["indexed"] == 1 and first["chunks"] == 3 and first["embedded"] == 3
    assert any("1 malformed" in w for w in first["warnings"])
    again = ingest(tsm, transcript)
    assert again["indexed"] == 0 and again["unchanged"] == 1 and again["embedded"] == 0
    data = tsm("search", "狩猟免許 更新 書類", "--type", "session", "-f", "json").json()
    hit = data["results"][0]
    assert hit["source"]["type"] == "session" and hit["source"]["category"] == "session"
    assert hit["section"].startswith("Q: 狩猟免許の更新手続き")
    assert hit["text"].startswith("Q: ") and "\n\nA: 更新には" in hit["text"]
    assert hit["source"]["created"] == "2026-03-10" and hit["source"]["updated"] == "2026-03-12"
    texts = " ".join(h["text"] for h in tsm("search", "subagent clear caveat firmware",
                                           "--type", "session", "-k", "10").json()["results"])
    assert "Subagent:" not in texts and "<command-name>" not in texts and "Caveat" not in texts


def test_grown_transcript_embeds_only_new_turns(vault: Path, tsm: Any, tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    ingest(tsm, transcript)
    turn = {"type": "user", "uuid": "u9", "timestamp": "2026-03-13T08:00:00.000Z",
            "isSidechain": False, "message": {"role": "user",
                                              "content": "What antenna length suits 429 MHz?"}}
    answer = {"type": "assistant", "uuid": "a9", "timestamp": "2026-03-13T08:00:03.000Z",
              "isSidechain": False, "message": {"role": "assistant", "content": [
                  {"type": "text", "text": "A quarter-wave whip at 429 MHz is about 17.5 cm."}]}}
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(turn) + "\n" + json.dumps(answer) + "\n")
    grown = ingest(tsm, transcript)
    assert grown["indexed"] == 1 and grown["chunks"] == 4 and grown["embedded"] == 1
    listed = [d for d in tsm("list", "-f", "json").json() if d["type"] == "session"]
    assert len(listed) == 1 and listed[0]["chunk_count"] == 4


def test_bad_transcripts(vault: Path, tsm: Any, tmp_path: Path) -> None:
    missing = tsm("ingest-session", str(tmp_path / "nope.jsonl"), "-f", "json")
    assert missing.code == 1 and missing.error()["kind"] == "user_error"
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff\xfe not a transcript")
    result = tsm("ingest-session", str(garbage), "-f", "json")
    assert result.code == 0 and result.json()["skipped"][0]["reason"] == "not valid UTF-8"


def test_index_picks_up_session_folders(vault: Path, tsm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "claude-projects" / "notes"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURE, folder / "abc.jsonl")
    (vault / "tsm.toml").write_text(f'[sessions]\ndirs = ["{folder.parent}"]\n')
    data = tsm("index", "-f", "json").json()
    assert data["indexed"] == 9
    types = {d["type"] for d in tsm("list", "-f", "json").json()}
    assert "session" in types
    assert tsm("index", "-f", "json").json()["indexed"] == 0
