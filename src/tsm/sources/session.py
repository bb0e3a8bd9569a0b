"""Claude Code session transcripts (JSONL) → one Q&A section per real user prompt.

A prompt and the assistant text that follows it, up to the next real prompt, become one
section dated by the prompt. Tool calls and results, thinking, sidechain (subagent) and meta
lines, harness-generated messages and messages under 10 characters are skipped. Malformed
lines (invalid JSON or UTF-8, wrong types, over MAX_LINE_BYTES) are counted, never fatal.

The file is read line by line (`stream`), so memory holds one line and the kept text, never
the whole transcript (tool output makes them hundreds of MB). Secrets in the kept text are
redacted before anything is stored (text/redaction.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..models import Document, Section
from ..statedir import Outside, open_beneath
from ..text.redaction import redact
from . import SkipFile

# Why a transcript whose real path is not in its sessions folder is not read.
OUTSIDE_ITS_FOLDER = "links outside its sessions folder"
MIN_CHARS = 10  # shorter messages ("ok", "yes", "続けて") carry no searchable content
HEADING_CHARS = 80
# A longer line is tool output or a file snapshot, never typed text: skipped unparsed, so one
# line cannot take more memory than this (plus its JSON objects).
MAX_LINE_BYTES = 16 * 1024 * 1024
_READ_BLOCK = 1024 * 1024
# Transcripts stamp the moment a line is written: a date past tomorrow is a broken stamp, and
# kept it would make the session "recent" for ever.
_FUTURE_SLACK = dt.timedelta(days=1)

# Text the harness writes into user messages: slash-command envelopes and their output,
# `!` bash mode, `#` memory mode, hook output, background-task notices, interrupts, the
# summary that opens a compacted conversation. Checked per text block, after wrappers.
_GENERATED_PREFIXES = (
    "<command-",
    "<local-command-",
    "<bash-",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "<user-memory-input>",
    "<task-notification>",
    "<cross-session-message",
    "Caveat: The messages below were generated",
    "[Request interrupted",
    "This session is being continued from a previous conversation",
)
# Context the harness prepends to a prompt the user did type (IDE selection, open file,
# reminders): stripped so the typed words remain.
_SURROGATES = re.compile("[\ud800-\udfff]")
_LEADING_WRAPPERS = re.compile(r"\A(?:\s*<(system-reminder|ide_[a-z_]+)>.*?</\1>)+\s*", re.DOTALL)


@dataclass
class Turn:
    """One real user prompt and the assistant text that answered it."""

    question: str
    date: str | None  # local ISO date of the prompt; None when the timestamp is unusable
    line: int  # 1-based line of the prompt in the file
    answer: list[str] = field(default_factory=list)
    # The answer's blocks as a set: a block re-written on retry is dropped in O(1), where a
    # scan of `answer` made 20,000 blocks quadratic (40 s).
    seen: set[str] = field(default_factory=set, repr=False)

    def add_answer(self, block: str) -> None:
        if block not in self.seen:
            self.seen.add(block)
            self.answer.append(block)


@dataclass(frozen=True)
class Transcript:
    """What a transcript holds for search, and how many lines had to be skipped as broken."""

    turns: tuple[Turn, ...]
    title: str | None  # the session's own name: /rename, a summary line or an AI title
    malformed: int
    # lines that are transcript records (a JSON object with a "type", or with none and a
    # user or assistant message)
    records: int = 0


class NoTranscriptLines(SkipFile):
    """Not one line of the file is a transcript record: a binary file, say. (Raised only
    where the caller cannot tell otherwise; `Transcript.records` says it for the rest.)"""


def parse(data: bytes) -> Transcript:
    """Turns, the session's own title and the malformed-line count of a transcript in memory.
    Raises SkipFile("not valid UTF-8") when no line decodes, as for a binary file."""
    return parse_lines(data.split(b"\n"))


def stream(path: Path, within: Path | None = None) -> tuple[Transcript, str, os.stat_result]:
    """Read a transcript line by line: what it holds, the SHA-256 of the bytes read, and the
    file's stat. Only the size seen when the file was opened is read, so a session being
    written to cannot keep the reader going; the half-written last line counts as malformed.
    Raises SkipFile for what is not a regular file, and transient SkipFile on I/O errors.

    `within`: the sessions folder (a real path) the transcript must really lie in. It is
    then opened from that folder down with no link followed (statedir.open_beneath), so a
    folder in it swapped for a link out after the walk found the file is not followed."""
    digest = hashlib.sha256()
    # Non-blocking open: a FIFO named *.jsonl would otherwise wait for a writer for ever.
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        try:
            fd = os.open(path, flags) if within is None else open_beneath(within, path, flags)
        except Outside:
            raise SkipFile(OUTSIDE_ITS_FOLDER) from None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SkipFile("not a regular file")
            os.set_blocking(fd, True)
            transcript = parse_lines(_lines(fh, info.st_size, digest))
    except OSError as exc:
        raise SkipFile(f"unreadable: {exc.strerror or exc}", transient=True) from None
    return transcript, digest.hexdigest(), info


def _lines(fh: IO[bytes], size: int, digest: Any) -> Iterator[bytes | None]:
    """The file's lines (up to `size` bytes), each hashed; None for a line too long to parse,
    read and hashed in blocks without being kept."""
    left = size
    while left > 0:
        line = fh.readline(min(left, MAX_LINE_BYTES + 1))
        if not line:
            return  # the file shrank while it was read
        left -= len(line)
        digest.update(line)
        if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
            yield line
            continue
        while left > 0 and not line.endswith(b"\n"):
            line = fh.readline(min(left, _READ_BLOCK))
            if not line:
                break
            left -= len(line)
            digest.update(line)
        yield None


def parse_lines(lines: Iterable[bytes | None]) -> Transcript:
    """`parse` over an iterable of raw lines (None: a line that was too long to keep)."""
    parser = _Parser()
    for lineno, line in enumerate(lines, 1):
        parser.feed(line, lineno)
    return parser.result()


class _Parser:
    """The state of one pass over a transcript's lines."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.malformed = 0
        self.undecodable = 0
        self.records = 0  # lines that decode as JSON
        self.accepted = 0  # of those, transcript records
        self.uuids: set[str] = set()
        self.summaries: list[tuple[str, Any]] = []
        self.custom_title: str | None = None
        self.ai_title: str | None = None

    def feed(self, raw: bytes | None, lineno: int) -> None:
        """Take one line; a broken one is counted, whatever is wrong with it."""
        if raw is None:
            self.malformed += 1
            return
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.malformed += 1  # includes a line cut mid-character
            self.undecodable += 1
            return
        try:
            # Each line is one record; JSON strings may hold raw U+2028/U+2029, which are
            # not line breaks here (the file is split on "\n" only).
            entry = json.loads(line)
        except (ValueError, RecursionError):
            self.malformed += 1  # includes the half-written last line of a live session
            return
        self.records += 1
        try:
            if self._record(entry, lineno):
                self.accepted += 1
            else:
                self.malformed += 1
        except Exception:  # a value of a type no check foresaw costs its line, not the file
            self.malformed += 1

    def _record(self, entry: Any, lineno: int) -> bool:
        """Use one parsed record; False when it is malformed."""
        kind = _kind(entry)
        if kind is None:
            return False
        uuid = entry.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.uuids:
                return True  # a record copied twice (resumed sessions) would double a turn
            self.uuids.add(uuid)
        turns = self.turns
        if kind in ("user", "assistant"):
            message = entry.get("message")
            if not isinstance(message, dict) or not isinstance(
                content := message.get("content"), (str, list)
            ):
                return False
            if entry.get("isSidechain") or entry.get("isMeta"):
                return True
            if kind == "user":
                _add_prompt(turns, entry, content, lineno)
            elif turns and not _is_synthetic(entry, message):
                answer = _assistant_text(content)
                # Assistant replies are written one content block per line; a repeated
                # block (re-written on retry) must not repeat in the answer.
                if len(answer) >= MIN_CHARS:
                    turns[-1].add_answer(answer)
        elif kind == "attachment":
            # A prompt typed while Claude was busy is stored only as a queued command.
            queued = entry.get("attachment")
            if (
                isinstance(queued, dict)
                and queued.get("type") == "queued_command"
                and queued.get("commandMode", "prompt") == "prompt"
                and isinstance(queued.get("prompt"), (str, list))
                and not entry.get("isSidechain")
            ):
                _add_prompt(turns, entry, queued["prompt"], lineno)
        elif kind == "summary":
            text = entry.get("summary")
            if not isinstance(text, str):
                return False
            if text.strip():
                leaf = entry.get("leafUuid")
                self.summaries.append(
                    (_valid(text.strip()), leaf if isinstance(leaf, str) else None)
                )
        elif kind == "custom-title" and _nonblank(entry.get("customTitle")):
            self.custom_title = _valid(entry["customTitle"].strip())
        elif kind == "ai-title" and _nonblank(entry.get("aiTitle")):
            self.ai_title = _valid(entry["aiTitle"].strip())
        return True

    def result(self) -> Transcript:
        if not self.turns and self.undecodable and not self.records:
            raise NoTranscriptLines("not valid UTF-8")
        title = _pick_title(self.custom_title, self.summaries, self.ai_title, self.uuids)
        return Transcript(
            tuple(self.turns), redact(title) if title else None, self.malformed, self.accepted
        )


def count_malformed(data: bytes) -> int:
    """How many lines `read` skipped as broken, for "skipped N malformed lines" reports."""
    return parse(data).malformed


def read(path: Path, rel: str, data: bytes) -> Document:
    """A transcript as a `session` document, one section per turn."""
    return document(rel, parse(data))


def document(rel: str, transcript: Transcript) -> Document:
    """The `session` document of a parsed transcript, one section per turn."""
    if not transcript.turns:
        raise SkipFile("no conversation turns")
    sections = tuple(_section(turn) for turn in transcript.turns)
    dates = [s.date for s in sections if s.date]
    # min/max rather than first/last: copied history from a resumed session can precede
    # newer lines out of order.
    first, last = (min(dates), max(dates)) if dates else (None, None)
    topic = _first_line(transcript.title or transcript.turns[0].question)
    return Document(
        path=rel,
        type="session",
        title=f"{first} Claude session: {topic}" if first else f"Claude session: {topic}",
        text="\n\n".join(s.text for s in sections),
        sections=sections,
        # No "session" tag: `type:session` already filters, and a tag on every transcript
        # would make each one an entity match for any query that says "session".
        tags=(),
        created=first,
        updated=last,
        date=last,
        date_source="transcript" if last else None,
        malformed_lines=transcript.malformed,
    )


def _kind(entry: Any) -> str | None:
    """A record's type, None for a line that is no record. A line with no `type` at all
    (older and third-party writers: `{"message": {"role": "user", "content": …},
    "timestamp": …}`) is a turn of its message's role when that is user or assistant."""
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    if isinstance(kind, str):
        return kind
    message = entry.get("message")
    if "type" not in entry and isinstance(message, dict):
        role = message.get("role")
        if role in ("user", "assistant"):
            return str(role)
    return None


def _add_prompt(
    turns: list[Turn], entry: dict[str, Any], content: str | list[Any], lineno: int
) -> None:
    if entry.get("isCompactSummary") or entry.get("isVisibleInTranscriptOnly"):
        return  # the summary the harness writes after /compact, not something typed
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    ):
        return  # tool output, even when the harness adds a text block beside it
    question = _prompt_text(content)
    if len(question) >= MIN_CHARS:
        turns.append(Turn(redact(question), _local_date(entry.get("timestamp")), lineno))


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
        blocks = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    return [_valid(b.strip()) for b in blocks if b.strip()]


def _valid(text: str) -> str:
    """`text` without lone surrogates (JSON may escape them: "\\udc80"), which SQLite and
    UTF-8 output refuse, and without NUL ("\\u0000"), which PostgreSQL refuses: one of them
    would make the whole transcript fail to store."""
    return _SURROGATES.sub("\ufffd", text).replace("\x00", "")


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
        if moment.tzinfo is not None:
            # 9999-12-31T23:59:59-12:00 is year 10000 in UTC: OverflowError
            moment = moment.astimezone()
    except (ValueError, OverflowError, OSError):
        return None
    if moment.replace(tzinfo=None) > dt.datetime.now() + _FUTURE_SLACK:
        return None
    return moment.date().isoformat()


def _pick_title(
    custom: str | None, summaries: list[tuple[str, Any]], ai: str | None, uuids: set[str]
) -> str | None:
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
    # Redacted whole, not block by block: a key can be split across two blocks of one answer.
    answer = redact("\n\n".join(turn.answer))
    text = f"Q: {turn.question}" + (f"\n\nA: {answer}" if answer else "")
    return Section(
        heading=f"Q: {_first_line(turn.question)}", text=text, line=turn.line, date=turn.date
    )


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= HEADING_CHARS else line[: HEADING_CHARS - 1].rstrip() + "…"


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
