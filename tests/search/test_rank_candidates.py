"""rank_candidates sums each candidate's terms once; its order and scores must stay those of
the pure functions that define them (found, final_score, order_key), ties included."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from tsm.search.rank.params import RankingParams
from tsm.search.results import (
    Candidate,
    final_score,
    found,
    multipliers,
    order_key,
    rank_candidates,
)
from tsm.store.hits import ResultDocument

NOW = dt.datetime(2026, 6, 1)
# Few distinct values, so that scores and terms tie often.
TERMS = st.sampled_from([0.0, 0.0005, 0.001, 0.002, 0.5])
SIGNAL = st.none() | st.tuples(st.integers(1, 3), TERMS)


@st.composite
def candidates(draw: st.DrawFn) -> tuple[list[Candidate], dict[int, ResultDocument]]:
    cands, docs = [], {}
    for doc_id in range(1, draw(st.integers(1, 12)) + 1):
        cands.append(
            Candidate(
                doc_id,
                fts=draw(SIGNAL),
                vector=draw(SIGNAL),
                entity=draw(SIGNAL),
                bridge=draw(SIGNAL),
                paraphrase=draw(SIGNAL),
                synonym_only=draw(st.booleans()),
                estimate=draw(st.none() | TERMS),
            )
        )
        if draw(st.integers(0, 5)):  # now and then a document deleted since it was found
            docs[doc_id] = ResultDocument(
                doc_id,
                f"notes/{doc_id}.md",
                "title",
                "markdown",
                draw(st.sampled_from(["note", "daily"])),
                draw(st.sampled_from([None, "outdated", "draft"])),
                None,
                None,
                draw(st.sampled_from([None, "2026-05-01", "2025-01-01"])),
                0,
                0.0,
                "[]",
            )
    return [c for c in cands if any((c.fts, c.vector, c.entity, c.bridge, c.paraphrase))], docs


@settings(max_examples=500, deadline=None)
@given(candidates())
def test_the_ranking_is_the_order_of_its_keys(
    case: tuple[list[Candidate], dict[int, ResultDocument]],
) -> None:
    cands, docs = case
    params = RankingParams()
    expected = sorted(
        (c for c in cands if c.doc_id in docs and found(c)),
        key=lambda c: order_key(c, *multipliers(params, NOW, docs[c.doc_id])),
    )
    ranked = rank_candidates(params, NOW, cands, docs)
    assert [s.cand.doc_id for s in ranked] == [c.doc_id for c in expected]
    for item in ranked:
        assert (item.recency, item.status, item.weight) == multipliers(params, NOW, item.doc)
        assert item.score == final_score(item.cand, item.recency, item.status, item.weight)
