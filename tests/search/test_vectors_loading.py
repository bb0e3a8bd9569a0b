"""A search that must not wait while the daemon loads its model and vectors:
the core on the sample vault indexed with the real model, and the daemon's first
searches through the real CLI. `vector_status` says in the JSON what was served."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tsm.config import load
from tsm.core.knowledge import LocalKnowledge
from tsm.core.request import SearchRequest


def core(root: Path, wait: bool) -> LocalKnowledge:
    return LocalKnowledge(load(root, os.environ), wait_for_vectors=wait)


def test_keywords_answer_while_the_vectors_are_not_loaded(indexed: Path) -> None:
    """Nothing loaded yet: a plain search answers from its keywords at once and says so;
    a search that asked for vectors waits for them; once loaded, everyone gets them."""
    waiting_not = core(indexed, wait=False)
    early = waiting_not.search(SearchRequest("install git"))
    assert early.mode == "fts" and early.vector_status == "loading"
    assert early.results[0].source.path == "notes/git-install.md"
    assert any("still loading" in w for w in early.warnings), early.warnings
    assert all(h.score_breakdown.vector is None for h in early.results)

    # --vec-only and --fallback error ask for vectors: they wait (and load them)
    for request in (
        SearchRequest("install git", mode="vector"),
        SearchRequest("install git", fallback="error"),
    ):
        asked = waiting_not.search(request)
        assert asked.vector_status == "used" and asked.mode == request.mode, request

    later = waiting_not.search(SearchRequest("install git"))
    assert later.mode == "hybrid" and later.vector_status == "used"
    assert not any("still loading" in w for w in later.warnings)
    waiting_not.close()


def test_the_json_says_what_was_served(indexed_read_only: Path, tsm: Any) -> None:
    """`vector_status` in the CLI's JSON: used, off (--fts-only) or unavailable."""
    assert tsm("search", "install git", "-f", "json").json()["vector_status"] == "used"
    fts = tsm("search", "install git", "--fts-only", "-f", "json").json()
    assert fts["vector_status"] == "off"
    none = tsm("search", "install git", "-f", "json", env={"TSM_EMBEDDER": "none"}).json()
    assert none["mode"] == "fts" and none["vector_status"] == "unavailable"
