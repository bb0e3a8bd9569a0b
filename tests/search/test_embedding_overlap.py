"""What a hybrid search does while the model embeds its query. The embedding runs on a pool
thread (and in the daemon, in the model's own process) while the search reads; whatever
the search still has to read after it has waited for the vector lengthens every search. So
the keywords, the bridge and the term coverage their weights need are read before the
wait, and only what needs the vectors after it. The sample vault indexed with the real
model, on either engine (TSM_TEST_STORE=postgres)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from patience import scaled

from tests.search.test_statement_count import counted
from tsm.config import load
from tsm.core.knowledge import LocalKnowledge
from tsm.core.request import SearchRequest
from tsm.embed import Embedder, get_embedder

# How the statement that reads term coverage (store.keywords.term_matches) starts on
# either engine: its first row is the chunk count.
COVERAGE = "SELECT 0, -1, "


class WaitsForCoverage:
    """The real model, whose query embedding returns once the search has sent the term
    coverage statement, or after a bound no search needs; `seen` records which."""

    def __init__(self, model: Embedder, sent: list[str]) -> None:
        self.model = model
        self.sent = sent
        self.seen: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def embed_query(self, text: str) -> np.ndarray:
        vector = self.model.embed_query(text)
        deadline = time.monotonic() + scaled(5.0)
        while not self._coverage_sent() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.seen.append(self._coverage_sent())
        return vector

    def _coverage_sent(self) -> bool:
        return any(sql.startswith(COVERAGE) or f" {COVERAGE}" in sql for sql in list(self.sent))


def test_the_term_coverage_is_read_while_the_query_is_embedded(indexed: Path) -> None:
    settings = load(indexed, os.environ)
    model = get_embedder(settings.embedder)
    assert model is not None
    sent: list[str] = []
    gate = WaitsForCoverage(model, sent)
    knowledge = LocalKnowledge(settings, embedder=gate)  # type: ignore[arg-type]
    try:
        ungated = LocalKnowledge(settings, embedder=model).search(SearchRequest("install git"))
        with counted(knowledge.conn()) as seen:
            gate.sent = seen
            result = knowledge.search(SearchRequest("install git"))
        assert result.mode == "hybrid" and result.vector_status == "used"
        assert gate.seen == [True], "the coverage was read only after the embedding"
        assert [h.chunk_id for h in result.results] == [h.chunk_id for h in ungated.results]
        assert [h.score for h in result.results] == [h.score for h in ungated.results]
    finally:
        knowledge.close()
