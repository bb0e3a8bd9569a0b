"""One SearchContext serving search after search (benchmarks hold one for a whole query
set): each search must see what was written since the last one, on the sample vault
indexed with the real model."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from pathlib import Path

from tsm.config import load
from tsm.core.knowledge import LocalKnowledge
from tsm.search.engine import SearchContext, search
from tsm.search.query import build_query


def test_a_reused_context_sees_vectors_dropped_between_searches(indexed: Path) -> None:
    core = LocalKnowledge(load(indexed, os.environ))
    ctx = SearchContext(core.conn(), core.settings, core.embedder, check_files=False)
    query = build_query("install git", today=dt.date.today(), mode="vector", top_k=5)
    first = search(ctx, query)  # loads the vectors
    top = search(ctx, query).results[0].source.path  # finds them unchanged
    assert top == first.results[0].source.path

    # another writer drops that note's vectors, as `tsm reindex` or a re-embedding would
    with sqlite3.connect(core.settings.db_path) as other:
        other.execute(
            "DELETE FROM embeddings WHERE embed_hash IN (SELECT c.embed_hash FROM chunks c"
            " JOIN documents d ON d.id = c.document_id WHERE d.path = ?)",
            (top,),
        )
    again = search(ctx, query)
    assert top not in [hit.source.path for hit in again.results]
    core.close()
