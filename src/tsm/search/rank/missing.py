"""Keyword hits whose chunk has no vector yet (the backfill is running): the rule that
lets them compete with hits the vectors measured (RankingParams.missing_vector)."""

from __future__ import annotations

from dataclasses import replace

from ..results import Candidate, keyword_score
from .params import RankingParams


def keyword_chunks(candidates: dict[int, Candidate]) -> dict[int, int]:
    """document id → the chunk the keywords (else the bridge) chose, for the hits they found."""
    return {
        doc_id: hit[0]
        for doc_id, cand in candidates.items()
        if (hit := cand.fts or cand.bridge) is not None
    }


def estimate_missing(
    candidates: dict[int, Candidate],
    keyword_chunk: dict[int, int],
    lacking: set[int],
    fts_plain: dict[int, float],
    *,
    coverage: float,
    vector_weight: float,
    params: RankingParams,
) -> None:
    """While some chunks have no vector yet, a keyword hit whose chunk (`lacking`) has none
    competes on an estimate of its hybrid score; `coverage` is the share of chunks with a
    vector, `fts_plain` each keyword hit's keyword-only term.

    Its vector term is unknown, not zero: summing keywords and vectors would rank every
    note the backfill has reached above it. Over the keyword hits whose chunk has a
    vector, the hybrid score (keywords + vector) is fitted as gain × their keyword-only
    score (least squares through the origin), and a hit without a vector is given gain ×
    its keyword-only score, or its own keyword score if that is more (a vector term is never
    negative): among themselves such hits keep the keyword-only order, and against the others
    they stand where the typical note of their keyword score stands.

    "evidence": what the vectors add counts in proportion to the evidence
    behind it, the share s of the query's keyword hits whose chunk has a vector. A note
    with one is ranked on (1 - s) × its estimate + s × its hybrid score, a note only the
    vectors found on s × its vector term: with few keyword hits embedded the vectors can
    reorder the keyword ranking only a little (they were measured on notes the other hits
    cannot be compared with), and with none they cannot reorder it at all; as s nears 1 the
    ranking nears the full fusion. "quorum" (the engine's): evidence once s reaches
    params.vector_quorum; below it the keyword hits keep the keyword-only order, since a
    reordering measured on so few of them was as likely to lose as to gain
    (_keyword_order). The gain is fitted as if params.fit_prior more hits had
    the gain that keywords and vector agreeing would give, 1 + vector weight × coverage, so
    that a gain fitted on two or three hits cannot lift or sink every hit without a vector.
    "calibrate" (the first rule): no blend, the gain fitted alone. In all three, every vector
    term is first scaled by the share of chunks that have a vector: it is normalised by the
    best cosine among the notes embedded so far, which overstates it while that share is
    small. Measured at 2, 10 and 50 % coverage against fts-only and evidence:
    bench/results/coverage-ranking.md and coverage-ranking-cuts.md; other rules tried:
    coverage-ranking-variants.md."""
    rule = params.missing_vector
    if rule == "none":
        return
    measured = sum(1 for chunk in keyword_chunk.values() if chunk not in lacking)
    share, prior_hits = 1.0, 0  # "calibrate"
    if rule in ("evidence", "quorum"):
        share = measured / len(keyword_chunk) if keyword_chunk else coverage
        prior_hits = params.fit_prior
    for cand in candidates.values():  # the vector side has seen only part of the notes
        if cand.vector is not None:
            cand.vector = (cand.vector[0], cand.vector[1] * coverage)
    if rule == "quorum" and share < params.vector_quorum:
        _keyword_order(candidates, keyword_chunk, fts_plain, share)
        return
    gain = _gain(
        candidates,
        keyword_chunk,
        lacking,
        fts_plain,
        measured,
        prior_hits,
        prior=1.0 + vector_weight * coverage,
    )
    for doc_id, cand in candidates.items():
        chunk = keyword_chunk.get(doc_id)
        if chunk is None:  # only the vectors (or an entity) found it
            if cand.vector is not None:
                cand.vector = (cand.vector[0], cand.vector[1] * share)
            continue
        estimate = max(0.0, gain * _plain(cand, fts_plain) - keyword_score(cand))
        own = _vector(cand)  # in full below; the part shown is weighted by the share
        if cand.vector is not None:
            cand.vector = (cand.vector[0], own * share)
        if chunk in lacking:  # another chunk's vector can lift it, not sink it
            cand.estimate = estimate + share * max(0.0, own - estimate)
        elif share < 1.0:
            cand.estimate = (1.0 - share) * estimate + share * own


def _plain(cand: Candidate, fts_plain: dict[int, float]) -> float:
    """The keyword score of a keyword-only search."""
    if cand.fts is None:
        return keyword_score(cand)
    return keyword_score(replace(cand, fts=(cand.fts[0], fts_plain[cand.doc_id])))


def _vector(cand: Candidate) -> float:
    return cand.vector[1] if cand.vector is not None else 0.0


def _gain(
    candidates: dict[int, Candidate],
    keyword_chunk: dict[int, int],
    lacking: set[int],
    fts_plain: dict[int, float],
    measured: int,
    prior_hits: int,
    prior: float,
) -> float:
    """Hybrid over keyword-only score, fitted on the keyword hits that have a vector and
    pulled toward `prior` by `prior_hits` hits that have it."""
    pairs = [
        (_plain(cand, fts_plain), keyword_score(cand) + _vector(cand))
        for doc_id, chunk in keyword_chunk.items()
        if chunk not in lacking
        for cand in (candidates[doc_id],)
    ]
    norm = sum(x * x for x, _ in pairs)
    gain = sum(x * y for x, y in pairs) / norm if norm > 0 else prior
    if prior_hits:
        gain = (measured * gain + prior_hits * prior) / (measured + prior_hits)
    return gain


def _keyword_order(
    candidates: dict[int, Candidate],
    keyword_hits: dict[int, int],
    fts_plain: dict[int, float],
    share: float,
) -> None:
    """Below the quorum: every keyword hit gets the score a keyword-only search gives it,
    and its vector counts for nothing, so the keyword hits come in exactly the keyword-only
    order; a note only the vectors found counts `share` × its vector term, so it can pass
    only a weak keyword hit."""
    for doc_id, cand in candidates.items():
        if doc_id not in keyword_hits:
            if cand.vector is not None:
                cand.vector = (cand.vector[0], cand.vector[1] * share)
            continue
        if cand.fts is not None:
            cand.fts = (cand.fts[0], fts_plain[doc_id])
        if cand.vector is not None:
            cand.vector = (cand.vector[0], 0.0)
