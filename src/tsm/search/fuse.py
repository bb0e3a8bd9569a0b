"""Ranking math as small pure functions: rank fusion and the score multipliers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

DEFAULT_STATUS_WEIGHTS: Mapping[str, float] = {
    "current": 1.0,
    "active": 1.0,
    "done": 1.0,
    "published": 1.0,
    "final": 1.0,
    "draft": 0.9,
    "wip": 0.9,
    "idea": 0.9,
    "outdated": 0.6,
    "archived": 0.6,
    "stale": 0.6,
    "superseded": 0.5,
    "deprecated": 0.5,
    "rejected": 0.5,
    "dropped": 0.5,
    "obsolete": 0.5,
}
RECENCY_FLOOR = 0.9  # an old note keeps 90 % of its score: reorders close results, never buries


def rrf(rank: int, k: int = 1000, weight: float = 1.0) -> float:
    """Reciprocal Rank Fusion term for a 1-based rank (Cormack, Clarke & Büttcher, SIGIR 2009),
    times k + 1 so that a signal's first hit contributes its weight whatever k is: scores stay
    readable (the formatters print three decimals) and order exactly as weight / (k + rank)."""
    return weight * (k + 1) / (k + rank)


def score_scaled_rrf(
    scores: Sequence[float], k: int, weight: float, floor: float | None = None
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
    a later hit never outweighs an earlier one. A ranking whose top is at or below an
    explicit floor counts nothing: none of its hits is nearer the query than an unrelated
    item, and a hit at the floor must not count more for being first than for being
    second. With the default k = 1000 the rank term varies by under 10 % over the first
    100 hits, so the fusion is in effect a convex combination of the normalised scores,
    which Bruch et al. found better than rank fusion and which measured better than k = 60
    on every dataset (bench/results/fusion-tuning.md).
    """
    if not scores:
        return []
    top, low = scores[0], min(scores) if floor is None else floor
    span = top - low
    if floor is not None and span <= 0:
        return [0.0] * len(scores)
    terms, scale = [], 1.0
    for rank, score in enumerate(scores, start=1):
        scale = min(scale, (score - low) / span) if span > 0 else 1.0
        terms.append(rrf(rank, k, weight) * max(scale, 0.0))
    return terms


def recency(
    age_days: float | None, half_life_days: float | None, floor: float = RECENCY_FLOOR
) -> float:
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


# The bridge's keyword ranking (the query translated, bridge.py) is weighted like the
# keywords, keyword_weight(coverage, BRIDGE_PARITY), from the IDF-weighted share of ALL the
# query's translation groups its best hit contains: unlike a word of another language, a
# group that occurs nowhere is a translation that failed, so it counts against the ranking.
# The parity is lower than the keywords' (0.5) because a dictionary renders a word in at
# most three ways and a note may use a fourth: full trust from 30 % coverage. Measured
# against evidence over known groups, parity 0.6 or 0, weights 0.5 to 2, and weighting it
# by what the keywords leave (1 - keyword weight): bench/results/bridge.md. At full
# coverage a translation counts 0.8 of the user's own word, so that the note with the word
# the user typed (免許) ranks above one with its translation (license) at equal match;
# 0.8 to 1 score within 0.006 of each other on every set.
BRIDGE_WEIGHT = 0.8
BRIDGE_PARITY = 0.3
# Near-synonyms of the query's Japanese words (bridge.synonym_groups: ja -> en -> ja through
# the lexicon) as a fourth keyword ranking, for paraphrases that share no word with their
# note (鯨とり for 捕鯨). Weighted like the keywords, keyword_weight(coverage, the keyword
# parity), from the IDF-weighted share of the synonym groups its best hit contains, times
# 0.3: a synonym is a guess twice removed, weaker than a translation (0.8). Every weight
# from 0.2 to 0.4 at parity 0.6 or 0.8 gave the same gains (jaquad-para Japanese +0.010,
# JaQuAD's first 500 +0.001 to +0.002) and changed no other set: bench/results/paraphrase.md.
# Used only with search.paraphrase on, off by default: on all 3,939 JaQuAD questions it costs
# 0.0012 (full runs with and without it on one tree, same file).
SYNONYM_WEIGHT = 0.3
# A keyword hit whose chunk has no vector yet: "calibrate" estimates its hybrid score from
# its keyword score (rank/missing.py); "evidence" does too, and lets the vectors
# reorder the keyword ranking only as far as the share of the query's keyword hits that
# have a vector; "quorum" (the engine's) is evidence once that share reaches VECTOR_QUORUM,
# and below it the keyword-only order; "none" lets such a hit compete on keywords alone,
# the oldest rule. The others are kept for bench/coverage_ranking.py. These are
# the defaults of rank/params.RankingParams, which a benchmark varies.
MISSING_VECTOR_RULES = ("none", "calibrate", "evidence", "quorum")
MISSING_VECTOR = "quorum"
# The share of a query's keyword hits the vectors must have measured before they may
# reorder the hits. Below it, a reordering rests on a few hits the others cannot be
# compared with: evidence's at 2 and 10 % coverage moved nDCG@10 by -0.0008 to +0.029
# and fell below fts-only in 7 of 20 rows. 0.25 and 0.34 gave the same figures on every
# set at every coverage and depth (at or above fts-only in all); 0.5 kept fts-only's floor
# but cut the gains at 50 % coverage by up to two thirds: coverage-ranking-variants.md.
VECTOR_QUORUM = 0.25
# Hits the gain of "evidence" counts as having the gain keywords and vector agreeing give
# (1 + vector weight x coverage) besides the hits it is fitted on: half a page of results,
# so that two or three embedded hits cannot set it alone. The one value tried.
FIT_PRIOR = 5
# Keywords get their full weight once the best hit holds half of what the query says in
# words the index knows (keyword_weight), and the vectors weigh 1 when their top drops by a
# quarter of its height above an unrelated chunk (vector_weight). Chosen together, each
# set or query language held out in turn, on cranfield, JaQuAD, jaquad-para (both
# languages), SciFact and scifact-ja: with any one of them out, the others chose these two
# values, and each held-out split was then at or above its better single signal
# (bench/results/fusion-held-out.md): keywords on a paraphrase's generic words no longer
# outvote the vectors.
KEYWORD_PARITY = 0.5
KEYWORD_WEIGHT_POWER = 2.0  # how fast trust falls below parity
VECTOR_DROP_DEPTH = 10
VECTOR_PARITY_DROP = 0.25  # the median drop is 0.25-0.37 on the five benchmark sets
MIN_VECTOR_DROP = 0.1


def keyword_weight(evidence: float, parity: float) -> float:
    """Weight of the keyword ranking, from the keyword evidence of its best hit
    (coverage.TermCoverage.keyword_evidence): (evidence / parity) ** 2, at most 1.

    Rank and score fusion alike ignore whether the keywords matched the query's point
    (Bruch et al., "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023), so a
    keyword ranking built on a few generic words would count as much as one that matches the
    query's distinctive words. The evidence tells them apart: questions that reuse a note's
    words score 0.5-1.0, paraphrases 0.15-0.5, queries in the other language almost nothing
    unless the words they share (acronyms, names) are all found. Full trust is the plain
    equal-weight fusion; letting keywords weigh up to 2 moved no benchmark set by more than
    0.003 (bench/results/fusion-tuning.md), so the simpler rule stays.
    """
    if parity <= 0:
        return 1.0
    return min(1.0, (max(evidence, 0.0) / parity) ** KEYWORD_WEIGHT_POWER)


def vector_weight(scores: Sequence[float], floor: float | None) -> float:
    """Weight of the vector ranking (best first, cosines), from how clearly its top stands
    out: (top - 10th) / (top - floor), `floor` being the query's mean cosine, over
    VECTOR_PARITY_DROP, the drop at which the vectors weigh as much as keywords at parity.

    A query the model understands pulls a few documents well above the rest; one it does
    not leaves a flat run of look-alikes, and then the keywords should decide. The drop is a
    score-based query-performance predictor in the spirit of Zhou & Croft's weighted
    information gain (SIGIR 2007): on every benchmark set it rank-correlates with the
    vector ranking's nDCG@10 (Spearman 0.26-0.67) and against keywords beating vectors.
    With fewer than ten documents ranked there is no such evidence and the weight is 1. The
    drop counts as at least 0.1 (observed: 0.08-0.75): near-duplicates, such as ten notes
    from one template, tie at the top, yet the vectors still know they beat the rest.
    """
    drop = vector_drop(scores, floor)
    if drop is None:
        return 1.0
    return min(max(drop, MIN_VECTOR_DROP), 1.0) / VECTOR_PARITY_DROP


def vector_drop(scores: Sequence[float], floor: float | None) -> float | None:
    """(top - 10th) / (top - floor) of a ranking of cosines, best first; None with fewer than
    ten, without a floor, or with the top at or below it."""
    if floor is None or len(scores) < VECTOR_DROP_DEPTH or scores[0] <= floor:
        return None
    return (scores[0] - scores[VECTOR_DROP_DEPTH - 1]) / (scores[0] - floor)


def term_coverage(matched_idf: float, query_idf: float) -> float:
    """Share of the query's IDF mass that the best keyword hit matches (0..1)."""
    return 0.0 if query_idf <= 0 else min(1.0, matched_idf / query_idf)
