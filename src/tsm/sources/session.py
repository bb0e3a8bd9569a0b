"""Claude Code session transcripts (JSONL) → one Q&A section per real user prompt.

A prompt and the assistant text that follows it, up to the next real prompt, become one
section dated by the prompt. Tool calls and results, thinking, sidechain (subagent) and meta
lines, harness-generated messages and messages under 10 characters are skipped. Malformed
lines are counted, never fatal.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models import Document, Section
from . import SkipFile

MIN_CHARS = 10  # shorter messages ("ok", "yes", "続けて") carry no searchable content
HEADING_CHARS = 80

# Text the harness writes into user messages: slash-command envelopes and their output,
# `!` bash mode, `#` memory mode, hook output, background-task notices, interrupts, the
# summary that opens a compacted conversation. Checked per text block, after wrappers.
_GENERATED_PREFIXES = (
    "<command-", "<local-command-", "<bash-", "<system-reminder>", "<user-prompt-submit-hook>",
    "<user-memory-input>", "<task-notification>", "<cross-session-message",
    "Caveat: The messages below were generated", "[Request interrupted",
    "This session is being continued from a previous conversation",
)
# Context the harness prepends to a prompt the user did type (IDE selection, open file,
# reminders): stripped so the typed words remain.
_LEADING_WRAPPERS = re.compile(r"\A(?:\s*<(system-reminder|ide_[a-z_]+)>.*?</\1>)+\s*", re.DOTALL)


@dataclass
class Turn:
    """One real user prompt and the assistant text that answered it."""

    question: str
    date: str | None  # local ISO date of the prompt; None when the timestamp is unusable
    line: int  # 1-based line of the prompt in the file
    answer: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Transcript:
    """What a transcript holds for search, and how many lines had to be skipped as broken."""

    turns: tuple[Turn, ...]
    title: str | None  # the session's own name: /rename, a summary line or an AI title
    malformed: int


def parse(data: bytes) -> Transcript:
    """Turns, the session's own title and the malformed-line count. Raises SkipFile only when
    the bytes are not UTF-8."""
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkipFile("not valid UTF-8") from None
    turns: list[Turn] = []
    malformed = 0
    uuids: set[str] = set()
    summaries: list[tuple[str, Any]] = []
    custom_title = ai_title = None
    # Split on "\n" only: JSON strings may hold raw U+2028/U+2029, which str.splitlines()
    # would treat as line breaks and so tear a valid record in two.
    for lineno, line in enumerate(raw.split("\n"), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            malformed += 1  # includes the half-written last line of a live session
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            malformed += 1
            continue
        kind = entry["type"]
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            if uuid in uuids:
                continue  # a record copied twice (resumed sessions) would double a turn
            uuids.add(uuid)
        if kind in ("user", "assistant"):
            message = entry.get("message")
            if not isinstance(message, dict) or \
                    not isinstance(content := message.get("content"), str | list):
                malformed += 1
                continue
            if entry.get("isSidechain") or entry.get("isMeta"):
                continue
            if kind == "user":
                _add_prompt(turns, entry, content, lineno)
            elif turns and not _is_synthetic(entry, message):
                answer = _assistant_text(content)
                # Assistant replies are written one content block per line; a repeated
                # block (re-written on retry) must not repeat in the answer.
                if len(answer) >= MIN_CHARS and answer not in turns[-1].answer:
                    turns[-1].answer.append(answer)
        elif kind == "attachment":
            # A prompt typed while Claude was busy is stored only as a queued command.
            queued = entry.get("attachment")
            if isinstance(queued, dict) and queued.get("type") == "queued_command" and \
                    queued.get("commandMode", "prompt") == "prompt" and \
                    isinstance(queued.get("prompt"), str | list) and \
                    not entry.get("isSidechain"):
                _add_prompt(turns, entry, queued["prompt"], lineno)
        elif kind == "summary":
            text = entry.get("summary")
            if not isinstance(text, str):
                malformed += 1
            elif text.strip():
                summaries.append((text.strip(), entry.get("leafUuid")))
        elif kind == "custom-title" and _nonblank(entry.get("customTitle")):
            custom_title = entry["customTitle"].strip()
        elif kind == "ai-title" and _nonblank(entry.get("aiTitle")):
            ai_title = entry["aiTitle"].strip()
    return Transcript(tuple(turns), _pick_title(custom_title, summaries, ai_title, uuids),
                      malformed)


def count_malformed(data: bytes) -> int:
    """How many lines `read` skipped as broken, for "skipped N malformed lines" reports."""
    return parse(data).malformed


def read(path: Path, rel: str, data: bytes) -> Document:
    """A transcript as a `session` document, one section per turn."""
    transcript = parse(data)
    if not transcript.turns:
        raise SkipFile("no conversation turns")
    sections = tuple(_section(turn) for turn in transcript.turns)
    dates = [s.date for s in sections if s.date]
    # min/max rather than first/last: copied history from a resumed session can precede
    # newer lines out of order.
    first, last = (min(dates), max(dates)) if dates else (None, None)
    topic = _first_line(transcript.title or transcript.turns[0].question)
    return Document(
        path=rel, type="session",
        title=f"{first} Claude session: {topic}" if first else f"Claude session: {topic}",
        text="\n\n".join(s.text for s in sections), sections=sections,
        # No "session" tag: `type:session` already filters, and a tag on every transcript
        # would make each one an entity match for any query that says "session".
        tags=(), created=first, updated=last, date=last,
        date_source="transcript" if last else None, malformed_lines=transcript.malformed,
    )


def _add_prompt(turns: list[Turn], entry: dict[str, Any], content: str | list[Any],
                lineno: int) -> None:
    if entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly"):
        return  # the summary the harness writes after /compact, not something typed
    if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return  # tool output, even when the harness adds a text block beside it
    question = _prompt_text(content)
    if len(question) >= MIN_CHARS:
        turns.append(Turn(question, _local_date(entry.get("timestamp")), lineno))


def _prompt_text(content: str | list[Any]) -> str:
    """The words the user typed: text blocks minus harness wrappers and generated blocks."""
    kept = []
    for block in _text_blocks(content):
        if block.startswith("<"):
            block = _LEADING_WRAPPERS.sub("", block)
        if block and not block.startswith(_GENERATED_PREFIXES):
            kept.append(block)
    return "\n\n".join(kept)


def _assistant_text(content: str | list[Any]) -> str:
    """Visible answer text; thinking, tool_use and other blocks are left out."""
    return "\n\n".join(_text_blocks(content))


def _text_blocks(content: str | list[Any]) -> list[str]:
    if isinstance(content, str):
        blocks = [content]
    else:
        blocks = [b["text"] for b in content if isinstance(b, dict) and
                  b.get("type") == "text" and isinstance(b.get("text"), str)]
    return [b.strip() for b in blocks if b.strip()]


def _is_synthetic(entry: dict[str, Any], message: dict[str, Any]) -> bool:
    """Messages the client wrote in Claude's place: API errors, "No response requested."."""
    return bool(entry.get("isApiErrorMessage")) or message.get("model") == "<synthetic>"


def _local_date(stamp: Any) -> str | None:
    """The prompt's date in the machine's time zone, as mtime dates are: transcripts stamp
    UTC, and a 08:00 prompt in Tokyo is still "today" to the person who typed it."""
    if not isinstance(stamp, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.date().isoformat()


def _pick_title(custom: str | None, summaries: list[tuple[str, Any]], ai: str | None,
                uuids: set[str]) -> str | None:
    """The user's /rename wins; then a summary of this file's own messages, an AI title, and
    last a summary whose leaf lies elsewhere (resumed files carry their parent's summaries)."""
    own = [text for text, leaf in summaries if leaf in uuids]
    if custom:
        return custom
    if own:
        return own[-1]
    if ai:
        return ai
    return summaries[-1][0] if summaries else None


def _section(turn: Turn) -> Section:
    answer = "\n\n".join(turn.answer)
    text = f"Q: {turn.question}" + (f"\n\nA: {answer}" if answer else "")
    return Section(heading=f"Q: {_first_line(turn.question)}", text=text, line=turn.line,
                   date=turn.date)


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= HEADING_CHARS else line[: HEADING_CHARS - 1].rstrip() + "…"


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
