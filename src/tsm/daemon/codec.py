"""Plain-dict forms of what crosses the socket: the Query, the SearchResult and a fingerprint
of the Settings. Light on purpose (no numpy, no tokenizer): the thin client imports it."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..models import Hit, Related, ScoreBreakdown, SearchResult, Source

if TYPE_CHECKING:
    from ..config import Settings
    from ..search.query import Query


def settings_fingerprint(settings: Settings) -> str:
    """Equal for a client and a daemon that would search the same index the same way. A client
    whose environment or tsm.toml differs from the daemon's searches in-process instead."""
    data = {
        "root": str(settings.index_root), "state": str(settings.state_dir),
        "db": str(settings.db_path), "values": dict(settings.values),
        "content_dirs": [asdict(d) for d in settings.content_dirs],
        "session_dirs": [str(p) for p in settings.session_dirs],
        "status_weights": dict(settings.status_weights),
    }
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()


def query_to_dict(query: Query) -> dict[str, Any]:
    out = asdict(query)
    filters = out["filters"]
    for key in ("after", "before"):
        if filters[key] is not None:
            filters[key] = filters[key].isoformat()
    return out


def query_from_dict(data: dict[str, Any]) -> Query:
    from ..search.query import Filters, Query

    raw = dict(data["filters"])
    for key in ("after", "before"):
        if raw.get(key):
            raw[key] = dt.date.fromisoformat(raw[key])
    for key in ("paths", "tags", "types"):
        raw[key] = tuple(raw.get(key) or ())
    fields = {k: v for k, v in data.items() if k != "filters"}
    return Query(**fields, filters=Filters(**raw))


def search_result_from_dict(data: dict[str, Any]) -> SearchResult:
    """The inverse of render.json_format.search_to_dict, so both paths render identically."""
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
