"""Claude Code session transcripts (JSONL) → Q&A sections.

Each real user prompt and the assistant's text answer that follows become one section,
dated by the prompt's timestamp. Skipped: tool calls and results, thinking blocks, sidechain
(subagent) and meta lines, system-generated messages (command output, reminders, caveats),
and messages under 10 characters. Malformed lines are counted, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import Document, Section
from . import SkipFile

MIN_CHARS = 10
_HEADING_CHARS = 80
_GENERATED_PREFIXES = ("<command-name>", "<command-message>", "<command-args>",
                       "<local-command-stdout>", "<local-command-stderr>", "<system-reminder>",
                       "<user-prompt-submit-hook>", "Caveat: The messages below were generated",
                       "[Request interrupted", "<bash-input>", "<bash-stdout>", "<bash-stderr>")


@dataclass
class Turn:
    """One question and the answer that followed it."""

    question: str
    timestamp: str | None
    answer: list[str] = field(default_factory=list)


@dataclass
class Transcript:
    turns: list[Turn]
    summary: str | None
    malformed: int


def _text(content: Any) -> str:
    """The human-readable text of a message: a string, or the `text` blocks of a list."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content
                 if isinstance(b, dict) and b.get("type") == "text" and
                 isinstance(b.get("text"), str)]
        return "\n\n".join(p.strip() for p in parts if p.strip())
    return ""


def _is_generated(text: str) -> bool:
    return text.startswith(_GENERATED_PREFIXES)


def parse(data: bytes) -> Transcript:
    """Turns, the session summary (if any) and the number of malformed lines."""
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkipFile("not valid UTF-8") from None
    turns: list[Turn] = []
    summary = None
    malformed = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            malformed += 1
            continue
        if not isinstance(entry, dict):
            malformed += 1
            continue
        kind = entry.get("type")
        if kind == "summary" and isinstance(entry.get("summary"), str):
            summary = entry["summary"].strip() or summary
            continue
        if kind not in ("user", "assistant"):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            malformed += 1
            continue
        if entry.get("isSidechain") or entry.get("isMeta"):
            continue
        text = _text(message.get("content"))
        if kind == "user":
            if len(text) < MIN_CHARS or _is_generated(text):
                continue  # tool results, command output, short acknowledgements
            stamp = entry.get("timestamp")
            turns.append(Turn(text, stamp if isinstance(stamp, str) else None))
        elif turns and text and len(text) >= MIN_CHARS:
            turns[-1].answer.append(text)
    return Transcript(turns, summary, malformed)


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= _HEADING_CHARS else line[: _HEADING_CHARS - 1] + "…"


def read(path: Path, rel: str, data: bytes) -> Document:
    transcript = parse(data)
    if not transcript.turns:
        raise SkipFile("no conversation turns")
    sections = []
    for turn in transcript.turns:
        answer = "\n\n".join(turn.answer)
        text = f"Q: {turn.question}" + (f"\n\nA: {answer}" if answer else "")
        date = turn.timestamp[:10] if turn.timestamp else None
        sections.append(Section(heading=f"Q: {_first_line(turn.question)}", text=text,
                                date=date))
    dates = [s.date for s in sections if s.date]
    first = dates[0] if dates else None
    last = dates[-1] if dates else None
    topic = transcript.summary or _first_line(transcript.turns[0].question)
    title = f"{first} Claude session: {topic}" if first else f"Claude session: {topic}"
    return Document(
        path=rel, type="session", title=title,
        text="\n\n".join(s.text for s in sections), sections=tuple(sections),
        created=first, updated=last, date=last, date_source="transcript" if last else None,
        malformed_lines=transcript.malformed,
    )
