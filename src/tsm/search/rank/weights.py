"""Each signal's weight in one query's fusion, from the evidence the signals read: how much
of the query the keywords' (and each translation's) best hits cover, and how clearly the
vector ranking's top stands out (fuse.keyword_weight, fuse.vector_weight)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import fuse
from .params import RankingParams


@dataclass(frozen=True)
class Evidence:
    """What the weights are computed from: the keyword evidence of the keywords' best hits
    (coverage.TermCoverage.keyword_evidence; None when keywords and vectors did not both
    rank something), the vector ranking's cosines and the query's mean cosine, each
    bridge ranking's best coverage (None for an empty one), the near-synonyms' (None
    without them)."""

    keyword: float | None = None
    vector_scores: Sequence[float] = ()
    background: float | None = None
    bridges: Sequence[float | None] = ()
    paraphrase: float | None = None


@dataclass(frozen=True)
class Weights:
    keyword: float = 1.0
    vector: float = 1.0
    bridges: tuple[float, ...] = ()
    paraphrase: float = 0.0


def signal_weights(evidence: Evidence, params: RankingParams) -> Weights:
    """Each signal's trust in this query: full (1) unless keywords and vectors both ranked
    something; a translation is a guess in every mode; near-synonyms weigh as keywords."""
    keyword = vector = 1.0
    if evidence.keyword is not None:
        keyword = fuse.keyword_weight(evidence.keyword, params.keyword_parity)
        vector = fuse.vector_weight(evidence.vector_scores, evidence.background)
    bridges = tuple(
        params.bridge_weight
        * (fuse.keyword_weight(best, params.bridge_parity) if best is not None else 1.0)
        for best in evidence.bridges
    )
    paraphrase = 0.0
    if evidence.paraphrase is not None:
        paraphrase = params.synonym_weight * fuse.keyword_weight(
            evidence.paraphrase, params.keyword_parity
        )
    return Weights(keyword, vector, bridges, paraphrase)
