"""Property-based: whatever the lines of a transcript hold, the reader parses or counts each
one as malformed; it never raises (except "not valid UTF-8" for a file with no record at all)
and never stores a lone surrogate or a secret it knows the shape of."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tsm.sources import SkipFile
from tsm.sources.session import document, parse_lines
from tsm.text.redaction import find_secrets

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KINDS = st.sampled_from(
    [
        "user",
        "user",
        "assistant",
        "assistant",
        "summary",
        "attachment",
        "custom-title",
        "ai-title",
        "system",
    ]
)
# Any code point, lone surrogates included (JSON can escape them: "\\ud800").
TEXT = st.text(st.characters(blacklist_categories=()), min_size=10, max_size=80) | st.sampled_from(
    [
        "A lone \ud800 surrogate in a long enough prompt",
        "What does password=hunter22 unlock in this setup?",
        "sk-ant-" + "Zx9" * 30,
        "9999-12-31T23:59:59-12:00",
        "2026-03-14T12:00:00Z",
        "<command-name>/clear</command-name>",
    ]
)


@st.composite
def records(draw: Any) -> bytes:
    """A well-formed record of a random kind, then any field (or none) set to any value."""
    kind = draw(KINDS)
    content = draw(
        TEXT
        | st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "text", "tool_use", "tool_result"]), "text": TEXT}
            ),
            max_size=3,
        )
    )
    record: dict[str, Any] = {
        "type": kind,
        "uuid": draw(st.text("abc", max_size=3)),
        "timestamp": draw(TEXT),
        "isSidechain": False,
        "message": {"role": "user", "content": content},
        "summary": draw(TEXT),
        "leafUuid": "a",
        "customTitle": draw(TEXT),
        "aiTitle": draw(TEXT),
        "attachment": {"type": "queued_command", "prompt": content},
    }
    for field in draw(st.lists(st.sampled_from(sorted(record)), max_size=2)):
        record[field] = draw(JSON)
    if draw(st.booleans()):
        record["message"] = (
            {**record["message"], "content": draw(JSON)}
            if isinstance(record["message"], dict)
            else record["message"]
        )
    raw = json.dumps(record, ensure_ascii=draw(st.booleans()))
    return raw.encode("utf-8", "surrogatepass")


LINES = st.lists(
    records()
    | records()
    | records()
    | st.binary(max_size=60)
    | st.sampled_from(
        [
            b"",
            b"\xef\xbb\xbf{}",
            b'{"type": "user"',
            "狩猟".encode()[:4],
            b"[" * 5000,
            b"\r",
        ]
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(LINES)
def test_any_lines_parse_or_count_never_raise(lines: list[bytes]) -> None:
    try:
        transcript = parse_lines(lines)
    except SkipFile as skip:
        assert str(skip) == "not valid UTF-8"
        return
    assert 0 <= transcript.malformed <= len(lines)
    try:
        doc = document("s.jsonl", transcript)
    except SkipFile as skip:
        assert str(skip) == "no conversation turns"
        return
    stored = doc.title + doc.text + "".join(s.heading for s in doc.sections)
    stored.encode("utf-8")  # no lone surrogate: SQLite would refuse the whole document
    assert find_secrets(stored) == []
