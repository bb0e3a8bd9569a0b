"""`tsm ingest-session` on a realistic Claude Code transcript, and session folders picked up
by `tsm index`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from claude_home import project_dir
from swap import link_swapped

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sessions" / "sample-session.jsonl"
# Lines with no "type": only a message and a timestamp, as older and third-party writers
# (and the original tool's end-to-end fixture) write them.
TYPELESS = FIXTURE.with_name("typeless-session.jsonl")


def ingest(tsm: Any, path: Path) -> dict:
    result = tsm("ingest-session", str(path), "-f", "json")
    assert result.code == 0, result.err
    return result.json()


def test_ingest_skips_noise_and_dates_turns(vault: Path, tsm: Any, tmp_path: Path) -> None:
    transcript = project_dir(vault) / "session.jsonl"
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
    texts = " ".join(
        h["text"]
        for h in tsm(
            "search", "subagent clear caveat firmware", "--type", "session", "-k", "10"
        ).json()["results"]
    )
    assert "Subagent:" not in texts and "<command-name>" not in texts and "Caveat" not in texts


def test_grown_transcript_embeds_only_new_turns(vault: Path, tsm: Any, tmp_path: Path) -> None:
    transcript = project_dir(vault) / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    ingest(tsm, transcript)
    turn = {
        "type": "user",
        "uuid": "u9",
        "timestamp": "2026-03-13T08:00:00.000Z",
        "isSidechain": False,
        "message": {"role": "user", "content": "What antenna length suits 429 MHz?"},
    }
    answer = {
        "type": "assistant",
        "uuid": "a9",
        "timestamp": "2026-03-13T08:00:03.000Z",
        "isSidechain": False,
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "A quarter-wave whip at 429 MHz is about 17.5 cm."}
            ],
        },
    }
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(turn) + "\n" + json.dumps(answer) + "\n")
    grown = ingest(tsm, transcript)
    assert grown["indexed"] == 1 and grown["chunks"] == 4 and grown["embedded"] == 1
    listed = [d for d in tsm("list", "-f", "json").json() if d["type"] == "session"]
    assert len(listed) == 1 and listed[0]["chunk_count"] == 4


def test_lines_without_a_type_are_turns_by_their_role(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """Refused as "no transcript lines"; string and block content both."""
    transcript = project_dir(vault) / "typeless.jsonl"
    shutil.copy(TYPELESS, transcript)
    first = ingest(tsm, transcript)
    assert first["indexed"] == 1 and first["chunks"] == 2 and first["malformed_lines"] == 0
    again = ingest(tsm, transcript)
    assert again["indexed"] == 0 and again["unchanged"] == 1 and again["chunks"] == 0
    data = tsm("search", "restic prune cron Sunday", "--type", "session", "-f", "json").json()
    hit = data["results"][0]
    assert hit["section"] == "Q: Which cron schedule runs the restic prune job on Sundays?"
    assert "\n\nA: Use 0 3 * * 0" in hit["text"]
    assert hit["source"]["created"] == "2026-03-12" and hit["source"]["updated"] == "2026-03-13"
    keys = tsm("search", "rotate backup keys age keypair", "--type", "session").json()
    assert keys["results"][0]["text"].startswith("Q: How do I rotate the backup keys")


def test_bad_transcripts(vault: Path, tsm: Any, tmp_path: Path) -> None:
    missing = tsm("ingest-session", str(tmp_path / "nope.jsonl"), "-f", "json")
    assert missing.code == 1 and missing.error()["kind"] == "user_error"
    garbage = project_dir(vault) / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff\xfe not a transcript")
    result = tsm("ingest-session", str(garbage), "-f", "json")
    assert result.code == 1 and result.error()["kind"] == "user_error"
    assert f"{garbage} is not a Claude Code transcript (not valid UTF-8)" in result.err


def not_a_transcript(tsm: Any, path: Path | str, **kw: Any) -> str:
    """The error of `tsm ingest-session PATH`: exit 1, one line, naming the file."""
    result = tsm("ingest-session", str(path), "-f", "json", **kw)
    assert result.code == 1 and result.out == "", (result.out, result.err)
    error = result.error()
    assert error["kind"] == "user_error" and "Traceback" not in result.err
    assert "only Claude Code transcripts (.jsonl)" in error["error"]
    return str(error["error"])


def test_a_note_or_a_jsonl_without_transcript_lines_is_a_user_error(
    indexed_read_only: Path, tsm: Any, tmp_path: Path
) -> None:
    """On an indexed note it answered "unchanged since it was ingested"."""
    note = indexed_read_only / "notes" / "git-install.md"
    assert not_a_transcript(tsm, note).startswith(f"{note} is not a Claude Code transcript: ")
    relative = not_a_transcript(tsm, "notes/git-install.md", cwd=indexed_read_only)
    assert relative.startswith(f"{note} is not a Claude Code transcript: ")  # as the daemon
    folder = project_dir(indexed_read_only)
    for name, data in (
        ("empty.jsonl", b""),
        ("blank.jsonl", b"\n \n"),
        ("words.jsonl", b"hello\nworld\n"),
        ("other.jsonl", b'{"id": 1}\n[1, 2]\n'),
        ("roles.jsonl", b'{"message": {"role": "system", "content": "Be brief and exact."}}\n'),
        ("null.jsonl", b'{"type": null, "message": {"role": "user", "content": "a question?"}}\n'),
    ):
        (folder / name).write_bytes(data)
        assert not_a_transcript(tsm, folder / name).startswith(
            f"{folder / name} is not a Claude Code transcript (no transcript lines): "
        )
    # A transcript with records but no turn yet (a summary only) is still a transcript.
    summary = folder / "summary.jsonl"
    summary.write_text('{"type": "summary", "summary": "Planning", "leafUuid": "x"}\n')
    result = tsm("ingest-session", str(summary), "-f", "json")
    assert result.code == 0 and result.json()["skipped"][0]["reason"] == "no conversation turns"


def test_index_picks_up_session_folders(indexed: Path, tsm: Any, tmp_path: Path) -> None:
    folder = tmp_path / "claude-projects" / "notes"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURE, folder / "abc.jsonl")
    (indexed / "tsm.toml").write_text(f'[sessions]\ndirs = ["{folder.parent}"]\n')
    data = tsm("index", "-f", "json").json()
    assert data["indexed"] == 1 and data["unchanged"] == 8  # the notes were indexed before
    types = {d["type"] for d in tsm("list", "-f", "json").json()}
    assert "session" in types
    assert tsm("index", "-f", "json").json()["indexed"] == 0


def test_a_transcript_linked_from_outside_its_sessions_folder_is_not_read(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """A session folder inside the root (a repository's tsm.toml may name one) holding a link
    to a transcript elsewhere (another project's) is skipped with its reason; a link to a
    transcript inside the folder is read like the file itself."""
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    secret = elsewhere / "private.jsonl"
    secret.write_text(
        record("user", "u1", "the merger with Globex closes on friday") + "\n", encoding="utf-8"
    )
    logs = vault / "logs"
    logs.mkdir()
    shutil.copy(FIXTURE, logs / "own.jsonl")
    (logs / "stolen.jsonl").symlink_to(secret)
    (logs / "again.jsonl").symlink_to(logs / "own.jsonl")
    (logs / "loop-a.jsonl").symlink_to(logs / "loop-b.jsonl")
    (logs / "loop-b.jsonl").symlink_to(logs / "loop-a.jsonl")
    (vault / "tsm.toml").write_text('[sessions]\ndirs = ["logs"]\n')
    index = tsm("index", "--no-embed", "-f", "json", env=NO_VECTORS)
    assert index.code == 0, index.out + index.err
    skipped = {s["path"]: s["reason"] for s in index.json()["skipped"]}
    loop = "a symbolic link to no file (broken, or a loop)"
    assert skipped == {  # named as notes are: from the index root
        "logs/stolen.jsonl": "links outside its sessions folder",
        "logs/loop-a.jsonl": loop,
        "logs/loop-b.jsonl": loop,
    }
    paths = {d["path"] for d in sessions(tsm)}
    assert paths == {"logs/own.jsonl"}  # the link inside is the same file, stored once
    found = tsm("search", "Globex merger", "--fts-only", "-f", "json", env=NO_VECTORS)
    assert found.code == 0 and found.json()["results"] == []


# --- secrets never stored, bad lines never cost the session ---------

NO_VECTORS = {"TSM_EMBEDDER": "none"}  # what is tested here is the keyword index


def record(kind: str, uuid: str, content: Any, stamp: str = "2026-03-13T08:00:00.000Z") -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "timestamp": stamp,
            "isSidechain": False,
            "message": {"role": kind, "content": content},
        },
        ensure_ascii=False,
    )


def sessions(tsm: Any) -> list[dict]:
    return [d for d in tsm("list", "-f", "json", env=NO_VECTORS).json() if d["type"] == "session"]


def test_secrets_in_a_transcript_are_not_stored(vault: Path, tsm: Any, tmp_path: Path) -> None:
    key = "sk-ant-" + "api03-" + "Qw7" * 30
    transcript = project_dir(vault) / "secret.jsonl"
    transcript.write_text(
        "\n".join(
            [
                record("user", "u1", f"Why is the deploy key {key} rejected by the gateway?"),
                record(
                    "assistant",
                    "a1",
                    [
                        {
                            "type": "text",
                            "text": (
                                "Try again with DB_PASSWORD=Tr0ub4dor and postgres://app:Tr0ub4dor@db:5432/x."
                            ),
                        }
                    ],
                ),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    result = tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS)
    assert result.code == 0 and result.json()["indexed"] == 1, result.err
    for query in (key, "Tr0ub4dor", "deploy key rejected by the gateway"):
        hits = json.dumps(
            tsm("search", query, "--fts-only", "-f", "json", env=NO_VECTORS).json()["results"]
        )
        assert key not in hits and "Tr0ub4dor" not in hits, query
        assert not query.startswith("deploy") or "[redacted:anthropic-key]" in hits, query
    text = tsm("get", sessions(tsm)[0]["path"], "-f", "json", env=NO_VECTORS).out
    assert key not in text and "Tr0ub4dor" not in text
    assert "[redacted:anthropic-key]" in text and "[redacted:url-credentials]" in text


def test_bad_lines_are_skipped_and_counted_never_the_session(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    transcript = project_dir(vault) / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    first = tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS).json()
    assert first["indexed"] == 1 and first["malformed_lines"] == 1
    cut = record("user", "u8", "途中で切れた行です、長い質問のつもり").encode()[:-5]
    appended = [
        record("user", "u9", "A prompt stamped in an impossible year", "9999-12-31T23:59:59-12:00"),
        cut.decode("utf-8", "ignore"),  # placeholder, replaced by the raw bytes below
        '{"type": "user", "message": {"content": 42}}',
        record("user", "u10", "And a perfectly good prompt after all that"),
    ]
    with transcript.open("ab") as fh:
        for line in appended:
            fh.write((cut if line == appended[1] else line.encode()) + b"\n")
    grown = tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS).json()
    assert grown["indexed"] == 1 and grown["removed"] == 0 and grown["skipped"] == []
    assert grown["malformed_lines"] == 3  # the fixture's own, the cut line, content 42
    listed = sessions(tsm)
    assert len(listed) == 1 and listed[0]["chunk_count"] == 5
    hits = tsm(
        "search",
        "perfectly good prompt",
        "--type",
        "session",
        "--fts-only",
        "-f",
        "json",
        env=NO_VECTORS,
    ).json()["results"]
    assert hits and hits[0]["section"] == "Q: And a perfectly good prompt after all that"


def test_an_unreadable_or_garbled_transcript_keeps_its_indexed_version(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    transcript = project_dir(vault) / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    assert (
        tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS).json()["indexed"] == 1
    )
    before = sessions(tsm)
    for garbage in (b"", b"\xff\xfe\x00 binary junk \x00\n", b"not json at all\n"):
        transcript.write_bytes(garbage)
        report = tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS).json()
        assert report["removed"] == 0 and report["indexed"] == 0, garbage
        assert report["skipped"][0]["reason"].endswith("the indexed version is kept")
        assert sessions(tsm) == before
    (vault / "tsm.toml").write_text(f'[sessions]\ndirs = ["{transcript.parent}"]\n')
    report = tsm("index", "-f", "json", env=NO_VECTORS).json()
    assert report["removed"] == 0 and sessions(tsm) == before


def test_a_transcript_over_the_cap_is_skipped_and_keeps_its_indexed_version(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    transcript = project_dir(vault) / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    assert (
        tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS).json()["indexed"] == 1
    )
    before = sessions(tsm)
    with transcript.open("r+b") as fh:  # sparse: 1.1 GB of size, no disk
        fh.truncate(1100 * 1024 * 1024)
    report = tsm("ingest-session", str(transcript), "-f", "json", env=NO_VECTORS).json()
    assert report["skipped"][0]["reason"] == (
        "larger than 1024 MB (1153433600 bytes); the indexed version is kept"
    )
    assert report["removed"] == 0 and sessions(tsm) == before


def test_session_folder_swapped_for_a_link_is_not_followed(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """A folder inside a sessions folder swapped for a link out of it while `tsm index`
    runs (by a checkout, or a process beside it): a transcript the walk found there is
    opened from its sessions folder down with no link followed, never from the folder the
    link leads to (an open by the whole path followed it)."""
    logs = vault / "logs"
    inside, elsewhere = logs / "sub", tmp_path / "elsewhere"
    for folder, words in ((inside, "ordinary weather chat"), (elsewhere, "Globex merger plans")):
        folder.mkdir(parents=True)
        for n in range(40):
            line = record("user", f"u{n}", f"tell me about the {words} number {n}")
            (folder / f"s{n}.jsonl").write_text(line + "\n", encoding="utf-8")
    (vault / "tsm.toml").write_text('[sessions]\ndirs = ["logs"]\n')
    with link_swapped(inside, elsewhere):
        for _ in range(8):  # each walk finds the folder real about half the time
            index = tsm("index", "--no-embed", "-f", "json", env=NO_VECTORS)
            assert index.code == 0, index.out + index.err
    found = tsm("search", "Globex merger", "--fts-only", "-f", "json", env=NO_VECTORS)
    assert found.code == 0 and found.json()["results"] == []
