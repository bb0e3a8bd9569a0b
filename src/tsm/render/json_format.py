"""The contract JSON (skill-interface.md + CONTRACT.md). The CLI, the daemon and the MCP server
all serialise through here, so there is one JSON shape by construction."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

from ..errors import TsmError
from ..models import Hit, Related, ScoreBreakdown, SearchResult, Source


def hit_to_dict(hit: Hit) -> dict[str, Any]:
    source = asdict(hit.source)
    source["tags"] = list(hit.source.tags)
    out: dict[str, Any] = {
        "chunk_id": hit.chunk_id,
        "score": hit.score,
        "score_breakdown": asdict(hit.score_breakdown),
        "text": hit.text,
        "source": source,
        "section": hit.section,
        "snippet": hit.snippet,
        "related": [asdict(r) for r in hit.related],
    }
    if hit.content is not None:
        out["content"] = hit.content
    return out


def search_to_dict(result: SearchResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "results": [hit_to_dict(h) for h in result.results],
        "total_matches": result.total_matches,
        "returned": result.returned,
        "mode": result.mode,
        "took_ms": result.took_ms,
        "filters": result.filters,
        "warnings": list(result.warnings),
        "vector_status": result.vector_status,
    }


def search_from_dict(data: dict[str, Any]) -> SearchResult:
    """The inverse of search_to_dict: the daemon's reply back into the core's dataclasses,
    so a search answered by the daemon renders exactly as one run in-process."""
    return SearchResult(
        query=data["query"],
        results=tuple(_hit_from_dict(h) for h in data["results"]),
        total_matches=data["total_matches"],
        mode=data["mode"],
        took_ms=data["took_ms"],
        filters=data.get("filters") or {},
        warnings=tuple(data.get("warnings") or ()),
        vector_status=data.get("vector_status") or ("off" if data["mode"] == "fts" else "used"),
    )


def _hit_from_dict(data: dict[str, Any]) -> Hit:
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


# Characters json.dumps(ensure_ascii=False) leaves raw that a terminal may obey (DEL, C1
# controls such as CSI U+009B) or that reorder what is shown (bidi controls, line
# separators). They only occur inside JSON strings, where \uXXXX is the same text.
_RAW_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps(data: Any) -> str:
    return _RAW_UNSAFE.sub(_json_escape, json.dumps(data, ensure_ascii=False, indent=2))


def error_object(error: TsmError) -> str:
    """The one-line JSON that goes to stderr on failure."""
    message = error.message + (f" ({error.hint})" if error.hint else "")
    return _RAW_UNSAFE.sub(
        _json_escape,
        json.dumps({"error": message, "kind": error.kind, **error.details}, ensure_ascii=False),
    )
