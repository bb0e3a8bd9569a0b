"""Issue 14 items 3, 8 and 15: transcripts holding secrets, then prompts asking for them
through the real prompt hook; transcripts that turn bad (an impossible timestamp, a line cut
mid-character, garbage, a FIFO) after they were indexed; answers of 10,000-40,000 blocks."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from . import Lab, Outcome

NO_VECTORS = {"TSM_EMBEDDER": "none"}
# Built from parts, so this file holds no secret-shaped string a scanner would flag.
SECRETS = {
    "anthropic-key": "sk-ant-" + "api03-" + "Rv8" * 30,
    "aws-access-key": "AKIA" + "ZK3TQ7WMBX5YHNV2",
    "password": "Gr8tZebra!x",
    "private-key": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZXBsb3kifQ.c2lnbmF0dXJlLWJ5dGVzLWhlcmU",
    "url-credentials": "Pg5ecret",
}
SECRET_TEXT = (
    f"The gateway key is {SECRETS['anthropic-key']} and the bucket key id is "
    f"{SECRETS['aws-access-key']}. Log in with password={SECRETS['password']} or the token "
    f"{SECRETS['jwt']}; the DB is postgres://deploy:{SECRETS['url-credentials']}@db:5432/app.\n"
    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRETS['private-key']}\n"
    f"{SECRETS['private-key']}\n-----END OPENSSH PRIVATE KEY-----\n"
)
PROMPTS = (
    "What is the gateway key?",
    "Which password do I log in with?",
    "What is the bucket key id?",
    "Show me the OpenSSH private key",
    "What is the deploy token for the DB?",
)


def _tsm_binary() -> str:
    return str(Path(sys.executable).with_name("tsm"))


def _record(kind: str, uuid: str, content: object, stamp: str = "2026-03-13T08:00:00.000Z") -> str:
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


def _transcript(lab: Lab, lines: list[str]) -> Path:
    """A transcript where Claude Code keeps them: outside the vault, under ~/.claude."""
    folder = lab.claude_project
    path = folder / "5e1f0c2a.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _ingest(lab: Lab, path: Path) -> dict:
    done = lab.tsm("ingest-session", str(path), "-f", "json", **NO_VECTORS)
    return json.loads(done.stdout or b"{}")


def _sessions(lab: Lab) -> list[dict]:
    out = lab.tsm("list", "-f", "json", **NO_VECTORS).stdout
    return [d for d in json.loads(out or b"[]") if d.get("type") == "session"]


def _ask(lab: Lab, prompt: str) -> str:
    """What the prompt hook would add to Claude's context ("" when it adds nothing)."""
    payload = {
        "prompt": prompt,
        "cwd": str(lab.vault),
        "hook_event_name": "UserPromptSubmit",
        "session_id": "x",
        "transcript_path": str(lab.vault / "t.jsonl"),
    }
    done = lab.hook(
        "user_prompt_submit.py",
        json.dumps(payload).encode(),
        timeout=150,
        TSM_BIN=_tsm_binary(),
        TSM_HOOK_TIMEOUT="120",
        TSM_INJECT_MIN_RELEVANCE="-1",
        TSM_INJECT_MIN_COVERAGE="0",
        **NO_VECTORS,
    )
    if not done.stdout:
        return ""
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


def _warm_up(lab: Lab) -> None:
    """One search first: a fresh $HOME has no caches yet (the first search of a new user may
    build them), and the hook's own deadline is about the prompt, not about this attack."""
    lab.tsm("search", "warm up", "--fts-only", "-f", "json", timeout=300, **NO_VECTORS)


def _leaks(text: str) -> list[str]:
    return [kind for kind, secret in SECRETS.items() if secret in text]


def secrets_in_transcript(lab: Lab) -> Outcome:
    """A transcript with API keys, a password, a JWT, a DB URL and an OpenSSH key; then
    prompts ask for them through the hook, and search, get and list are read."""
    lab.tsm("trust", str(lab.vault))
    path = _transcript(
        lab,
        [
            _record("user", "u1", f"Keep these deploy credentials for later: {SECRET_TEXT}"),
            _record("assistant", "a1", [{"type": "text", "text": f"Noted. {SECRET_TEXT}"}]),
        ],
    )
    report = _ingest(lab, path)
    if report.get("indexed") != 1:
        return Outcome(False, f"the transcript was not ingested: {report}")
    _warm_up(lab)
    seen = "".join(_ask(lab, prompt) for prompt in PROMPTS)
    if "redacted:" not in seen:
        return Outcome(False, "the hook injected nothing: the attack did not reach it")
    for prompt in PROMPTS:
        seen += lab.tsm("search", prompt, "--fts-only", "-f", "json", **NO_VECTORS).stdout.decode()
    seen += lab.tsm("get", _sessions(lab)[0]["path"], "-f", "json", **NO_VECTORS).stdout.decode()
    leaked = _leaks(seen)
    return Outcome(
        not leaked,
        f"leaked: {', '.join(leaked)}"
        if leaked
        else "stored and shown as [redacted:KIND]; the hook injects none",
    )


def secrets_in_note_through_hook(lab: Lab) -> Outcome:
    """The same secrets in a note (kept verbatim: the user's words); prompts ask for them."""
    lab.tsm("trust", str(lab.vault))
    (lab.vault / "notes").mkdir()
    (lab.vault / "notes" / "deploy.md").write_text(f"# Deploy\n\n{SECRET_TEXT}", encoding="utf-8")
    lab.tsm("index", "-f", "json", **NO_VECTORS)
    _warm_up(lab)
    seen = "".join(_ask(lab, prompt) for prompt in PROMPTS)
    if "deploy.md" not in seen:
        return Outcome(False, "the hook injected nothing: the attack did not reach it")
    leaked = _leaks(seen)
    return Outcome(
        not leaked,
        f"the hook injected: {', '.join(leaked)}"
        if leaked
        else "the note is found; its secrets are injected only as [redacted:KIND]",
    )


def _indexed_then(lab: Lab, tail: bytes) -> tuple[dict, list[dict], list[dict]]:
    """Ingest a good transcript, append `tail`, ingest again: (report, before, after)."""
    path = _transcript(
        lab,
        [
            _record("user", "u1", "How do I rotate the SQLite WAL file safely?"),
            _record("assistant", "a1", [{"type": "text", "text": "Checkpoint, then back up."}]),
        ],
    )
    _ingest(lab, path)
    before = _sessions(lab)
    with path.open("ab") as fh:
        fh.write(tail)
    return _ingest(lab, path), before, _sessions(lab)


def _kept(report: dict, before: list[dict], after: list[dict], what: str) -> Outcome:
    if not before:
        return Outcome(False, "the first ingest failed")
    if report.get("removed") or len(after) != len(before):
        return Outcome(False, f"{what}: the session was removed ({report})")
    return Outcome(
        True,
        f"{what}: session kept, malformed_lines="
        f"{report.get('malformed_lines')}, skipped={report.get('skipped')}",
    )


def impossible_timestamp_line(lab: Lab) -> Outcome:
    """Append a prompt stamped "9999-12-31T23:59:59-12:00" (year 10000 in UTC)."""
    line = _record("user", "u2", "A prompt from the far future", "9999-12-31T23:59:59-12:00")
    return _kept(*_indexed_then(lab, line.encode() + b"\n"), "bad timestamp")


def line_cut_mid_utf8(lab: Lab) -> Outcome:
    """Append a line cut inside a multi-byte character (a crash mid-write)."""
    line = _record("user", "u2", "狩猟免許の更新に必要な書類は？").encode()[:-4]
    report, before, after = _indexed_then(lab, line + b"\n")
    outcome = _kept(report, before, after, "cut line")
    if outcome.ok and not report.get("malformed_lines"):
        return Outcome(False, "the cut line was not counted as malformed")
    return outcome


def transcript_turns_to_garbage(lab: Lab) -> Outcome:
    """An indexed transcript is truncated, then overwritten with binary junk."""
    path = _transcript(
        lab,
        [
            _record("user", "u1", "How do I rotate the SQLite WAL file safely?"),
            _record("assistant", "a1", [{"type": "text", "text": "Checkpoint, then back up."}]),
        ],
    )
    _ingest(lab, path)
    before = _sessions(lab)
    for junk in (b"", b"\xff\xfe\x00\x00 junk \x00\n"):
        path.write_bytes(junk)
        outcome = _kept(_ingest(lab, path), before, _sessions(lab), f"{len(junk)} bytes")
        if not outcome.ok:
            return outcome
    return Outcome(True, "empty and binary rewrites: the indexed session is kept")


def fifo_in_sessions_dir(lab: Lab) -> Outcome:
    """A FIFO named *.jsonl in a sessions folder, then `tsm index` (a reader would block)."""
    lab.tsm("trust", str(lab.vault))
    folder = lab.home / ".claude" / "projects"
    (folder / "p").mkdir(parents=True)
    os.mkfifo(folder / "p" / "pipe.jsonl")
    (lab.vault / "tsm.toml").write_text(f'[sessions]\ndirs = ["{folder}"]\n')
    done = lab.tsm("index", "-f", "json", timeout=60, **NO_VECTORS)
    report = json.loads(done.stdout or b"{}")
    reasons = [s.get("reason") for s in report.get("skipped", [])]
    return Outcome(done.returncode == 0, f"exit {done.returncode}; skipped: {reasons}")


def _blocks(lab: Lab, count: int) -> tuple[float, dict]:
    lines = [_record("user", "u0", "Explain the whole migration step by step")]
    # Blocks of one length that differ only at the end: the costliest to compare.
    preamble = "Next, move one more table to the new schema and verify its row counts. " * 4
    lines += [
        _record("assistant", f"a{n}", [{"type": "text", "text": f"{preamble}#{n:06d}"}])
        for n in range(count)
    ]
    path = _transcript(lab, lines)
    started = time.perf_counter()
    done = lab.tsm(
        "ingest-session",
        str(path),
        "-f",
        "json",
        timeout=300,
        TSM_STATE_DIR=str(lab.base / f"state-{count}"),
        **NO_VECTORS,
    )
    return time.perf_counter() - started, json.loads(done.stdout or b"{}")


def many_answer_blocks(lab: Lab) -> Outcome:
    """One prompt answered by 10,000, then 40,000 text blocks, one per line: 4× the blocks
    must cost about 4× the time, not 16× (each block was compared with every earlier one:
    20,000 blocks took 40 s)."""
    small, report_small = _blocks(lab, 10_000)
    large, report_large = _blocks(lab, 40_000)
    if report_small.get("indexed") != 1 or report_large.get("indexed") != 1:
        return Outcome(False, f"not ingested: {report_small} {report_large}")
    ratio = large / small
    return Outcome(
        ratio < 6,
        f"10,000 blocks {small:.1f} s, 40,000 blocks {large:.1f} s: "
        f"{ratio:.1f}× (linear ≈ 4×, quadratic ≈ 16×)",
    )


ATTACKS = [
    secrets_in_transcript,
    secrets_in_note_through_hook,
    impossible_timestamp_line,
    line_cut_mid_utf8,
    transcript_turns_to_garbage,
    fifo_in_sessions_dir,
    many_answer_blocks,
]
