"""Ranking math against hand-computed tables: RRF, weighted fusion, recency, status, coverage."""

from __future__ import annotations

import pytest

from tsm.search.fuse import (
    DEFAULT_STATUS_WEIGHTS,
    KEYWORD_WEIGHT_CAP,
    RECENCY_FLOOR,
    keyword_weight,
    recency,
    rrf,
    score_scaled_rrf,
    status_penalty,
    term_coverage,
)

approx = pytest.approx


@pytest.mark.parametrize(
    ("rank", "k", "weight", "expected"),
    [
        (1, 60, 1.0, 1 / 61),
        (2, 60, 1.0, 1 / 62),
        (10, 60, 1.0, 1 / 70),
        (100, 60, 1.0, 1 / 160),
        (1, 0, 1.0, 1.0),
        (3, 10, 1.0, 1 / 13),
        (1, 60, 2.0, 2 / 61),
        (5, 60, 0.5, 0.5 / 65),
    ],
)
def test_rrf_table(rank: int, k: int, weight: float, expected: float) -> None:
    assert rrf(rank, k, weight) == approx(expected)


def test_rrf_default_k_is_60() -> None:
    assert rrf(1) == approx(1 / 61)


def test_rrf_decreases_with_rank() -> None:
    scores = [rrf(r) for r in range(1, 50)]
    assert scores == sorted(scores, reverse=True)


def fused(rankings: dict[str, list[int]], k: int = 60,
          weights: dict[str, float] | None = None) -> dict[int, float]:
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
        1: approx(1 / 61 + 1 / 62),  # 0.0325225
        2: approx(1 / 62),
        3: approx(1 / 63 + 1 / 61),  # 0.0322665
        4: approx(1 / 63),
    }
    assert totals[1] == approx(0.0325224749)
    assert totals[3] == approx(0.0322664585)
    assert sorted(totals, key=totals.__getitem__, reverse=True) == [1, 3, 2, 4]


def test_weighted_fusion_hand_computed() -> None:
    # A keyword ranking trusted 3x: its first item wins even though the vector puts it second.
    totals = fused({"fts": [1, 2], "vector": [2, 1]}, weights={"fts": 3.0})
    assert totals[1] == approx(3 / 61 + 1 / 62)  # 0.0653117
    assert totals[2] == approx(3 / 62 + 1 / 61)  # 0.0647858
    assert totals[1] > totals[2]
    # Weighted down to 0.125 the same ranking loses.
    totals = fused({"fts": [1, 2], "vector": [2, 1]}, weights={"fts": 0.125})
    assert totals[2] > totals[1]


def test_rrf_with_weight_one_equals_unweighted() -> None:
    assert fused({"a": [1, 2]}, weights={"a": 1.0}) == fused({"a": [1, 2]})
    assert fused({"a": [7], "b": [7]}, k=0, weights={"a": 0.5}) == {7: approx(1.5)}


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
        (15, 30, RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 2 ** -0.5),
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
    assert recency(100, 10, floor=0.0) == approx(2 ** -10)
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
        (0.3, 0.6, 0.125),
        (0.0, 0.6, 0.0),
        (-0.5, 0.6, 0.0),
        (0.9, 0.6, 1.5 ** 3),
        (1.0, 0.5, KEYWORD_WEIGHT_CAP),  # 8 capped at 4
        (0.5, 0.0, 1.0),  # parity off
    ],
)
def test_keyword_weight(coverage: float, parity: float, expected: float) -> None:
    assert keyword_weight(coverage, parity) == approx(expected)


# --- score-scaled RRF -----------------------------------------------------------------------


def test_score_scaled_rrf_hand_computed_bm25() -> None:
    """Floor 0: each term is the RRF term times score / top score."""
    terms = score_scaled_rrf([10.0, 5.0, 2.5], k=60, weight=2.0, floor=0.0)
    assert terms == approx([2 / 61, 2 / 62 * 0.5, 2 / 63 * 0.25])


def test_score_scaled_rrf_with_a_background_floor() -> None:
    """Cosines 0.9, 0.85, 0.8 over a background of 0.8: scales 1, 0.5, 0."""
    terms = score_scaled_rrf([0.9, 0.85, 0.8], k=60, weight=1.0, floor=0.8)
    assert terms == approx([1 / 61, 0.5 / 62, 0.0])


def test_score_scaled_rrf_min_max_without_a_floor() -> None:
    terms = score_scaled_rrf([3.0, 2.0, 1.0], k=0, weight=1.0)
    assert terms == approx([1.0, 0.5 / 2, 0.0])


def test_below_the_floor_counts_nothing() -> None:
    assert score_scaled_rrf([0.9, 0.7], k=60, weight=1.0, floor=0.8)[1] == 0.0


def test_tied_scores_are_plain_rrf() -> None:
    assert score_scaled_rrf([2.0, 2.0, 2.0], k=60, weight=1.0, floor=2.0) == \
        approx([1 / 61, 1 / 62, 1 / 63])


def test_a_later_hit_never_outweighs_an_earlier_one() -> None:
    """Synonym-only hits come after exact ones whatever their own BM25 (engine.py)."""
    terms = score_scaled_rrf([4.0, 1.0, 9.0, 3.0], k=60, weight=1.0, floor=0.0)
    assert terms == sorted(terms, reverse=True)
    assert terms[2] <= terms[1]


def test_empty_ranking() -> None:
    assert score_scaled_rrf([], k=60, weight=1.0) == []
