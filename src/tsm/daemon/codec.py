"""Plain-dict forms of what crosses the socket: the SearchResult and a fingerprint of the
Settings. Light on purpose (no numpy, no tokenizer): the thin client imports it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import Hit, SearchResult


def settings_fingerprint(settings: Settings) -> str:
    """Equal for a client and a daemon that would search the same index the same way. A client
    whose environment or tsm.toml differs from the daemon's searches in-process instead."""
    data = {
        "root": str(settings.index_root),
        "state": str(settings.state_dir),
        "db": str(settings.db_path),
        # daemon.* settings steer the client (auto-start), not how the daemon searches
        "values": {k: v for k, v in settings.values.items() if not k.startswith("daemon.")},
        "content_dirs": [asdict(d) for d in settings.content_dirs],
        "session_dirs": [str(p) for p in settings.session_dirs],
        "status_weights": dict(settings.status_weights),
        "ignored": list(settings.ignored),  # the untrusted tsm.toml warning
    }
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()


def search_result_from_dict(data: dict[str, Any]) -> SearchResult:
    """The inverse of render.json_format.search_to_dict, so both paths render identically."""
    from ..models import SearchResult

    return SearchResult(
        query=data["query"],
        results=tuple(_hit(h) for h in data["results"]),
        total_matches=data["total_matches"],
        mode=data["mode"],
        took_ms=data["took_ms"],
        filters=data.get("filters") or {},
        warnings=tuple(data.get("warnings") or ()),
    )


def _hit(data: dict[str, Any]) -> Hit:
    from ..models import Hit, Related, ScoreBreakdown, Source

    source = dict(data["source"])
    source["tags"] = tuple(source.get("tags") or ())
    return Hit(
        chunk_id=data["chunk_id"],
        score=data["score"],
        score_breakdown=ScoreBreakdown(**data["score_breakdown"]),
        text=data["text"],
        source=Source(**source),
        section=data["section"],
        snippet=data["snippet"],
        related=tuple(Related(**r) for r in data.get("related") or ()),
        content=data.get("content"),
    )
