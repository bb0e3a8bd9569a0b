"""The search request's wire form (client → daemon): it round-trips every field, and leaves
out the fields at their default, so a daemon started before a field was added (it refuses
fields it does not know) still answers every request that does not use that field."""

from __future__ import annotations

import datetime as dt
import json

from tsm.core.request import SearchRequest

NOW = dt.datetime(2026, 3, 20, 9, 30)


def test_a_plain_request_sends_its_text_and_clock_only() -> None:
    assert SearchRequest("git", now=NOW).to_wire() == {
        "text": "git",
        "now": "2026-03-20T09:30:00",
    }


def test_every_field_round_trips() -> None:
    request = SearchRequest(
        "git",
        top_k=3,
        mode="fts",
        fallback="error",
        after="2025",
        before="2026-02",
        recent="3m",
        year="2025",
        paths=("notes",),
        tags=("setup",),
        types=("pdf",),
        categories=("research",),
        lang="ja",
        include_content=2,
        now=NOW,
    )
    wire = json.loads(json.dumps(request.to_wire()))
    assert SearchRequest.from_wire(wire) == request
