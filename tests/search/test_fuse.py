"""Ranking math against hand-computed tables: RRF, weighted fusion, recency, status, coverage."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsm.config import load
from tsm.search.fuse import (
    DEFAULT_STATUS_WEIGHTS,
    RECENCY_FLOOR,
    VECTOR_PARITY_DROP,
    keyword_weight,
    recency,
    rrf,
    score_scaled_rrf,
    status_penalty,
    term_coverage,
    vector_weight,
)
from tsm.search.rank.params import RankingParams
from tsm.search.rank.weights import Evidence, signal_weights

approx = pytest.approx


@pytest.mark.parametrize(
    ("rank", "k", "weight", "expected"),
    [
        (1, 60, 1.0, 61 / 61),
        (2, 60, 1.0, 61 / 62),
        (10, 60, 1.0, 61 / 70),
        (100, 60, 1.0, 61 / 160),
        (1, 0, 1.0, 1.0),
        (3, 10, 1.0, 11 / 13),
        (1, 60, 2.0, 2 * 61 / 61),
        (5, 60, 0.5, 0.5 * 61 / 65),
        (1, 1000, 1.0, 1.0),
        (100, 1000, 1.0, 1001 / 1100),
    ],
)
def test_rrf_table(rank: int, k: int, weight: float, expected: float) -> None:
    """weight / (k + rank), times k + 1 so that the first hit contributes its weight."""
    assert rrf(rank, k, weight) == approx(expected)


def test_rrf_default_k_is_1000() -> None:
    assert rrf(1) == approx(1.0)
    assert rrf(2) == approx(1001 / 1002)


def test_rrf_decreases_with_rank() -> None:
    scores = [rrf(r) for r in range(1, 50)]
    assert scores == sorted(scores, reverse=True)


def fused(
    rankings: dict[str, list[int]], k: int = 60, weights: dict[str, float] | None = None
) -> dict[int, float]:
    """Weighted RRF as the engine sums it: item -> sum of rrf(rank, k, weight) over signals."""
    totals: dict[int, float] = {}
    for signal, items in rankings.items():
        weight = (weights or {}).get(signal, 1.0)
        for rank, item in enumerate(items, start=1):
            totals[item] = totals.get(item, 0.0) + rrf(rank, k, weight)
    return totals


def test_fusion_hand_computed() -> None:
    # fts: A B C ; vector: C A D
    totals = fused({"fts": [1, 2, 3], "vector": [3, 1, 4]})
    assert totals == {
        1: approx(61 / 61 + 61 / 62),  # 1.9838710
        2: approx(61 / 62),
        3: approx(61 / 63 + 61 / 61),  # 1.9682540
        4: approx(61 / 63),
    }
    assert totals[1] == approx(1.9838709677)
    assert totals[3] == approx(1.9682539683)
    assert sorted(totals, key=totals.__getitem__, reverse=True) == [1, 3, 2, 4]


def test_weighted_fusion_hand_computed() -> None:
    # A keyword ranking trusted 3x: its first item wins even though the vector puts it second.
    totals = fused({"fts": [1, 2], "vector": [2, 1]}, weights={"fts": 3.0})
    assert totals[1] == approx(61 * (3 / 61 + 1 / 62))  # 3.9838710
    assert totals[2] == approx(61 * (3 / 62 + 1 / 61))  # 3.9516129
    assert totals[1] > totals[2]
    # Weighted down to 0.125 the same ranking loses.
    totals = fused({"fts": [1, 2], "vector": [2, 1]}, weights={"fts": 0.125})
    assert totals[2] > totals[1]


def test_rrf_with_weight_one_equals_unweighted() -> None:
    assert fused({"a": [1, 2]}, weights={"a": 1.0}) == fused({"a": [1, 2]})
    assert fused({"a": [7], "b": [7]}, k=0, weights={"a": 0.5}) == {7: approx(1.5)}


def test_rrf_scaling_keeps_the_order_of_plain_rrf() -> None:
    """Multiplying every term by k + 1 changes no ranking."""
    rankings = {"fts": [1, 2, 3, 4, 5], "vector": [5, 3, 6, 1, 7]}
    totals = fused(rankings, k=60, weights={"fts": 0.4})
    plain: dict[int, float] = {}
    for signal, items in rankings.items():
        for rank, item in enumerate(items, start=1):
            plain[item] = plain.get(item, 0.0) + (0.4 if signal == "fts" else 1.0) / (60 + rank)
    assert sorted(totals, key=totals.__getitem__) == sorted(plain, key=plain.__getitem__)


# --- recency -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "half_life", "expected"),
    [
        (None, 30, 1.0),  # undated
        (10, None, 1.0),  # decay off
        (10, 0, 1.0),
        (10, -5, 1.0),
        (0, 30, 1.0),
        (-3, 30, 1.0),  # dated in the future: no bonus
        (30, 30, RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5),  # the half-life point
        (60, 30, RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.25),
        (15, 30, RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 2**-0.5),
    ],
)
def test_recency_table(age: float | None, half_life: float | None, expected: float) -> None:
    assert recency(age, half_life) == approx(expected)


def test_recency_half_life_point_with_default_floor() -> None:
    assert RECENCY_FLOOR == 0.9
    assert recency(30, 30) == approx(0.95)


def test_recency_never_below_floor() -> None:
    assert recency(1e9, 1) == approx(RECENCY_FLOOR)
    assert recency(1e9, 1) >= RECENCY_FLOOR
    assert recency(100, 10, floor=0.0) == approx(2**-10)
    assert recency(10, 10, floor=0.5) == approx(0.75)


def test_recency_is_monotonic() -> None:
    values = [recency(age, 30) for age in range(0, 400, 7)]
    assert values == sorted(values, reverse=True)


# --- status ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, 1.0),
        ("", 1.0),
        ("current", 1.0),
        ("draft", 0.9),
        ("outdated", 0.6),
        ("archived", 0.6),
        ("superseded", 0.5),
        ("rejected", 0.5),
        ("deprecated", 0.5),
        ("Outdated", 0.6),  # case-insensitive
        ("SUPERSEDED", 0.5),
        ("something-else", 1.0),  # unknown statuses are neutral
    ],
)
def test_status_penalty_defaults(status: str | None, expected: float) -> None:
    assert status_penalty(status) == approx(expected)


def test_default_status_weights_order() -> None:
    w = DEFAULT_STATUS_WEIGHTS
    assert w["current"] > w["draft"] > w["outdated"] > w["superseded"] > 0
    assert all(0 < v <= 1 for v in w.values())


def test_status_penalty_overrides() -> None:
    overrides = {"draft": 0.3, "custom": 0.7}
    assert status_penalty("draft", overrides) == approx(0.3)
    assert status_penalty("Custom", overrides) == approx(0.7)
    assert status_penalty("outdated", overrides) == approx(0.6)  # defaults still apply
    assert status_penalty(None, overrides) == 1.0
    assert status_penalty("draft", {}) == approx(0.9)


def test_status_penalty_does_not_mutate_defaults() -> None:
    status_penalty("draft", {"draft": 0.1})
    assert DEFAULT_STATUS_WEIGHTS["draft"] == 0.9


# --- coverage and keyword weight ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("matched", "query", "expected"),
    [
        (0.0, 0.0, 0.0),
        (1.0, 0.0, 0.0),
        (1.0, -1.0, 0.0),
        (0.0, 4.0, 0.0),
        (1.0, 4.0, 0.25),
        (3.0, 4.0, 0.75),
        (4.0, 4.0, 1.0),
        (5.0, 4.0, 1.0),  # capped
    ],
)
def test_term_coverage(matched: float, query: float, expected: float) -> None:
    assert term_coverage(matched, query) == approx(expected)


@pytest.mark.parametrize(
    ("coverage", "parity", "expected"),
    [
        (0.6, 0.6, 1.0),
        (0.3, 0.6, 0.25),
        (0.45, 0.6, 0.5625),
        (0.0, 0.6, 0.0),
        (-0.5, 0.6, 0.0),
        (0.9, 0.6, 1.0),  # keywords never weigh more than parity
        (1.0, 0.5, 1.0),
        (0.5, 0.0, 1.0),  # parity off
    ],
)
def test_keyword_weight(coverage: float, parity: float, expected: float) -> None:
    assert keyword_weight(coverage, parity) == approx(expected)


def test_the_engine_weighs_keywords_and_vectors_equally_at_their_parities(tmp_path: Path) -> None:
    """Keywords get full weight once their best hit holds half the query, and vectors weigh
    as much once their top drops by a quarter: the constants chosen with each benchmark set
    held out in turn (bench/results/fusion-held-out.md)."""
    params = RankingParams.from_settings(load(tmp_path, {"TSM_NO_USER_CONFIG": "1"}))
    assert params.keyword_parity == RankingParams().keyword_parity == 0.5
    weights = signal_weights(
        Evidence(keyword=0.5, vector_scores=cosines(0.90, 0.875), background=0.80), params
    )
    assert (weights.keyword, weights.vector) == (approx(1.0), approx(1.0))
    half = signal_weights(
        Evidence(keyword=0.25, vector_scores=cosines(0.9, 0.875), background=0.8), params
    )
    assert half.keyword == approx(0.25)


def cosines(top: float, tenth: float) -> list[float]:
    """A ranking of twelve cosines falling evenly from `top` to `tenth`, then below."""
    step = (top - tenth) / 9
    return [top - i * step for i in range(10)] + [tenth - 0.01, tenth - 0.02]


@pytest.mark.parametrize(
    ("top", "tenth", "floor", "expected"),
    [
        (0.90, 0.875, 0.80, 1.0),  # a drop of a quarter: as much as keywords at parity
        (0.90, 0.87, 0.80, 0.3 / VECTOR_PARITY_DROP),  # a median drop
        (0.90, 0.84, 0.80, 0.6 / VECTOR_PARITY_DROP),  # a clear winner
        (0.90, 0.89, 0.80, 0.1 / VECTOR_PARITY_DROP),  # a flat run of look-alikes
        (0.90, 0.75, 0.80, 1.0 / VECTOR_PARITY_DROP),  # drop capped at 1
    ],
)
def test_vector_weight_from_the_drop(
    top: float, tenth: float, floor: float, expected: float
) -> None:
    assert vector_weight(cosines(top, tenth), floor) == approx(expected)


def test_vector_weight_is_neutral_without_evidence() -> None:
    assert vector_weight(cosines(0.9, 0.87), None) == 1.0  # no background level
    assert vector_weight([0.9, 0.8, 0.7], 0.5) == 1.0  # fewer than ten documents
    assert vector_weight([0.5] * 12, 0.6) == 1.0  # the top is below the background
    assert vector_weight([0.7] * 12, 0.6) == approx(0.1 / VECTOR_PARITY_DROP)  # ten tied


# --- score-scaled RRF -----------------------------------------------------------------------


def test_score_scaled_rrf_hand_computed_bm25() -> None:
    """Floor 0: each term is the RRF term times score / top score."""
    terms = score_scaled_rrf([10.0, 5.0, 2.5], k=60, weight=2.0, floor=0.0)
    assert terms == approx([2.0, 2 * 61 / 62 * 0.5, 2 * 61 / 63 * 0.25])


def test_score_scaled_rrf_with_a_background_floor() -> None:
    """Cosines 0.9, 0.85, 0.8 over a background of 0.8: scales 1, 0.5, 0."""
    terms = score_scaled_rrf([0.9, 0.85, 0.8], k=60, weight=1.0, floor=0.8)
    assert terms == approx([1.0, 0.5 * 61 / 62, 0.0])


def test_score_scaled_rrf_min_max_without_a_floor() -> None:
    terms = score_scaled_rrf([3.0, 2.0, 1.0], k=0, weight=1.0)
    assert terms == approx([1.0, 0.5 / 2, 0.0])


def test_below_the_floor_counts_nothing() -> None:
    assert score_scaled_rrf([0.9, 0.7], k=60, weight=1.0, floor=0.8)[1] == 0.0


def test_tied_scores_are_plain_rrf() -> None:
    for floor in (None, 1.0):
        assert score_scaled_rrf([2.0, 2.0, 2.0], k=60, weight=1.0, floor=floor) == approx(
            [61 / 61, 61 / 62, 61 / 63]
        )


def test_a_ranking_at_or_below_its_floor_counts_nothing() -> None:
    """Its first hit is as unrelated as the floor: it counts no more than its second."""
    assert score_scaled_rrf([0.5, 0.5], k=60, weight=1.0, floor=0.5) == [0.0, 0.0]
    assert score_scaled_rrf([0.4, 0.3], k=60, weight=1.0, floor=0.5) == [0.0, 0.0]


def test_a_later_hit_never_outweighs_an_earlier_one() -> None:
    """Synonym-only hits come after exact ones whatever their own BM25 (engine.py)."""
    terms = score_scaled_rrf([4.0, 1.0, 9.0, 3.0], k=60, weight=1.0, floor=0.0)
    assert terms == sorted(terms, reverse=True)
    assert terms[2] <= terms[1]


def test_empty_ranking() -> None:
    assert score_scaled_rrf([], k=60, weight=1.0) == []
