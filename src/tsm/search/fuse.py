"""Ranking math as small pure functions: rank fusion and the score multipliers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

DEFAULT_STATUS_WEIGHTS: Mapping[str, float] = {
    "current": 1.0, "active": 1.0, "done": 1.0, "published": 1.0, "final": 1.0,
    "draft": 0.9, "wip": 0.9, "idea": 0.9,
    "outdated": 0.6, "archived": 0.6, "stale": 0.6,
    "superseded": 0.5, "deprecated": 0.5, "rejected": 0.5, "dropped": 0.5, "obsolete": 0.5,
}
RECENCY_FLOOR = 0.9  # on the RRF scale 0.9 moves a note a few ranks: decay reorders, never buries


def rrf(rank: int, k: int = 60, weight: float = 1.0) -> float:
    """Reciprocal Rank Fusion term for a 1-based rank (Cormack, Clarke & Büttcher, SIGIR 2009)."""
    return weight / (k + rank)


def score_scaled_rrf(scores: Sequence[float], k: int, weight: float, floor: float | None = None
                     ) -> list[float]:
    """RRF terms of one ranking (best first), each scaled by its normalised score.

    Plain RRF sees only ranks: a keyword ranking whose first hit scores twice the second
    counts the same as one whose top ten are tied (Bruch et al., "An Analysis of Fusion
    Functions for Hybrid Retrieval", TOIS 2023). Scaling each term by the score normalised
    within its own ranking, (s - floor) / (max - floor), keeps RRF's indifference to the
    scale of the two signals but lets a clear winner count for more. `floor` is the score of
    an unrelated item: 0 for BM25, the query's mean cosine over all chunks for vectors
    (cosines sit in a narrow band, and the mean does not depend on how deep the ranking
    goes); None uses the ranking's lowest score. The scale never rises down the ranking, so
    a later hit never outweighs an earlier one (bench/results/fusion-tuning.md).
    """
    if not scores:
        return []
    top, low = scores[0], min(scores) if floor is None else floor
    span = top - low
    terms, scale = [], 1.0
    for rank, score in enumerate(scores, start=1):
        scale = min(scale, (score - low) / span) if span > 0 else 1.0
        terms.append(rrf(rank, k, weight) * max(scale, 0.0))
    return terms


def recency(age_days: float | None, half_life_days: float | None,
            floor: float = RECENCY_FLOOR) -> float:
    """floor + (1 - floor) * 2^(-age / half_life); 1.0 when undated or decay is off."""
    if age_days is None or not half_life_days or half_life_days <= 0:
        return 1.0
    return floor + (1.0 - floor) * math.pow(0.5, max(age_days, 0.0) / half_life_days)


def status_penalty(status: str | None, weights: Mapping[str, float] | None = None) -> float:
    """Multiplier for a frontmatter status; unknown or missing statuses are neutral."""
    if not status:
        return 1.0
    table = {**DEFAULT_STATUS_WEIGHTS, **(weights or {})}
    return table.get(status.lower(), 1.0)


KEYWORD_WEIGHT_POWER = 3.0  # how fast trust moves away from parity (tuned on jaquad/-para)
KEYWORD_WEIGHT_CAP = 4.0


def keyword_weight(evidence: float, parity: float) -> float:
    """RRF weight of the keyword ranking relative to the vector ranking (weight 1), from the
    keyword evidence of its best hit (coverage.TermCoverage.keyword_evidence): (evidence /
    parity) ** 3, capped at 4.

    Rank fusion ignores score magnitudes (Bruch et al., "An Analysis of Fusion Functions for
    Hybrid Retrieval", TOIS 2023), so a keyword ranking built on a few generic words would
    count as much as one that matches the query's distinctive words. The evidence tells them
    apart: questions that reuse a note's words score 0.5-1.0, paraphrases 0.15-0.5, queries
    in the other language almost nothing unless the words they share (acronyms, names) are
    all found.
    """
    if parity <= 0:
        return 1.0
    return min(KEYWORD_WEIGHT_CAP, (max(evidence, 0.0) / parity) ** KEYWORD_WEIGHT_POWER)


def term_coverage(matched_idf: float, query_idf: float) -> float:
    """Share of the query's IDF mass that the best keyword hit matches (0..1)."""
    return 0.0 if query_idf <= 0 else min(1.0, matched_idf / query_idf)
