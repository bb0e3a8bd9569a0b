"""Rank what the signals found: fuse their rankings into one candidate per document, apply
the score multipliers, and order the candidates best first. Pure functions of what was
read (the candidates' document rows are given), parameterised by RankingParams."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from . import fuse

if TYPE_CHECKING:
    from ..store.hits import ResultDocument
    from .rank.params import RankingParams


@dataclass
class Candidate:
    """One document found by at least one signal: (chunk id, RRF contribution) per signal."""

    doc_id: int
    fts: tuple[int, float] | None = None
    vector: tuple[int, float] | None = None
    entity: tuple[int, float] | None = None
    bridge: tuple[int, float] | None = None  # the query translated (bridge.py)
    paraphrase: tuple[int, float] | None = None  # near-synonyms (bridge.synonym_groups)
    synonym_only: bool = False  # the keywords matched only synonyms of the query's words
    similarity: float | None = None  # cosine of the best chunk, when vectors were used
    estimate: float | None = None  # vector term estimated for a keyword hit with no vector yet


class Match(NamedTuple):
    """A document a signal found: the chunk it chose and the signal's score for it (bm25,
    positive; a cosine). A NamedTuple: a ranking holds hundreds."""

    chunk_id: int
    document_id: int
    score: float


Ranking = Sequence[tuple[int, int, float]]  # Matches (or plain tuples), best first


@dataclass(frozen=True)
class Signals:
    """One query's rankings and the weight each signal has in it (fuse.keyword_weight,
    fuse.vector_weight, ...). The bridge has one ranking per direction of translation, each
    holding only notes in the other language (bridge.across_languages). An entity hit is
    (chunk id, document id, rank), equally specific entities sharing a rank."""

    keyword: Ranking = ()
    keyword_weight: float = 1.0
    vector: Ranking = ()
    vector_weight: float = 1.0
    background: float | None = None  # the query's mean cosine: an unrelated chunk's level
    bridges: Sequence[tuple[Ranking, float]] = ()
    paraphrase: Ranking = ()
    paraphrase_weight: float = 0.0
    entity: Sequence[tuple[int, int, int]] = ()
    synonym_only: frozenset[int] = frozenset()  # keyword hits through synonyms alone


def fuse_signals(signals: Signals, k: int) -> dict[int, Candidate]:
    """Each document's term from every ranking that found it (fuse.score_scaled_rrf): a
    pure function of the rankings, so its properties (a hit at least as good as another on
    every signal never ranks below it) are tested on generated rankings."""
    candidates: dict[int, Candidate] = {}

    def terms(ranking: Ranking, weight: float, floor: float | None = 0.0) -> list[float]:
        return fuse.score_scaled_rrf([s for _, _, s in ranking], k, weight, floor=floor)

    for ranking, weight in signals.bridges:
        for (chunk_id, doc_id, _), term in zip(ranking, terms(ranking, weight), strict=True):
            cand = candidates.setdefault(doc_id, Candidate(doc_id))
            if cand.bridge is None or term > cand.bridge[1]:  # a note in both languages
                cand.bridge = (chunk_id, term)
    paraphrase = signals.paraphrase
    for (chunk_id, doc_id, _), term in zip(
        paraphrase, terms(paraphrase, signals.paraphrase_weight), strict=True
    ):
        candidates.setdefault(doc_id, Candidate(doc_id)).paraphrase = (chunk_id, term)
    keyword = signals.keyword
    for (chunk_id, doc_id, _), term in zip(
        keyword, terms(keyword, signals.keyword_weight), strict=True
    ):
        cand = candidates.setdefault(doc_id, Candidate(doc_id))
        cand.fts, cand.synonym_only = (chunk_id, term), doc_id in signals.synonym_only
    vector = signals.vector
    for (chunk_id, doc_id, similarity), term in zip(
        vector, terms(vector, signals.vector_weight, signals.background), strict=True
    ):
        cand = candidates.setdefault(doc_id, Candidate(doc_id))
        cand.vector, cand.similarity = (chunk_id, term), similarity
    for chunk_id, doc_id, rank in signals.entity:
        candidates.setdefault(doc_id, Candidate(doc_id)).entity = (chunk_id, fuse.rrf(rank, k))
    return candidates


@dataclass
class Scored:
    """A candidate with its final score, its document's row and the multipliers."""

    score: float
    cand: Candidate
    doc: ResultDocument
    chunk_id: int
    recency: float
    status: float
    weight: float
    stale: bool = False


def multipliers(
    params: RankingParams, now: dt.datetime, doc: ResultDocument
) -> tuple[float, float, float]:
    """(recency, status, weight) for a document."""
    path, doc_type, category, status = doc.path, doc.type, doc.category, doc.status
    date = doc.doc_date
    weight = 1.0
    half_life = params.category_half_life.get(category) or params.half_life_days
    for folder in params.folders:
        if path == folder.path or path.startswith(folder.path.rstrip("/") + "/"):
            weight = folder.weight
            if folder.half_life_days is not None:
                half_life = folder.half_life_days
    if doc_type == "session":
        weight *= params.sessions_weight
        half_life = params.sessions_half_life_days
    age = None
    if date:
        try:
            age = (now.date() - dt.date.fromisoformat(date[:10])).days
        except ValueError:
            age = None
    return (
        fuse.recency(age, half_life),
        fuse.status_penalty(status, params.status_weights),
        weight,
    )


def rank_candidates(
    params: RankingParams,
    now: dt.datetime,
    candidates: Sequence[Candidate],
    docs: Mapping[int, ResultDocument],
) -> list[Scored]:
    """Final score = fused RRF × recency × status × weight, best first; a candidate whose
    document has no row (deleted, or not the reader's to see) is dropped. Each candidate's
    terms are summed once, for its score and its place alike: a search ranks hundreds."""
    keyed = []
    for cand in candidates:
        doc = docs.get(cand.doc_id)
        if doc is None:
            continue
        terms = signal_terms(cand)
        if not found(cand, terms):
            continue
        recency, status, weight = multipliers(params, now, doc)
        signals = [
            s
            for s in (cand.fts, cand.vector, cand.entity, cand.bridge, cand.paraphrase)
            if s is not None
        ]
        chunk_id = max(signals, key=lambda s: s[1])[0]  # the passage the strongest signal chose
        key = order_key(cand, recency, status, weight, terms)
        keyed.append((key, Scored(-key[0], cand, doc, chunk_id, recency, status, weight)))
    keyed.sort(key=itemgetter(0))
    return [item for _, item in keyed]


def found(cand: Candidate, terms: tuple[float, ...] | None = None) -> bool:
    """Whether a signal found the document. The vector side lists the nearest chunks
    whatever they are; one no nearer to the query than the query's mean chunk (the floor of
    fuse.score_scaled_rrf) earns a vector term of 0, and with no other signal it is no result,
    only a neighbour. `terms`: its signal_terms, when the caller has them."""
    if any(s is not None for s in (cand.fts, cand.entity, cand.bridge, cand.paraphrase)):
        return True
    return sum(signal_terms(cand) if terms is None else terms) > 0.0


def final_score(cand: Candidate, recency: float, status: float, weight: float) -> float:
    """The fused signals times the multipliers: rising in every signal's term and in every
    multiplier, so a hit at least as good as another on each never scores below it."""
    return fused_score(cand) * (recency * status * weight)


def order_key(
    cand: Candidate,
    recency: float,
    status: float,
    weight: float,
    terms: tuple[float, ...] | None = None,
) -> tuple[float, ...]:
    """Best first: by final score; where scores tie (hits no signal scored above its floor,
    or a difference rounding swallowed), by the fused terms, then each signal's term and
    each multiplier, so that a hit better on some signal and as good on the rest still
    comes first; the document id last, for a stable order between equals. Its first item
    is minus final_score. `terms`: the candidate's signal_terms, when the caller has them."""
    if terms is None:
        terms = signal_terms(cand)
    fused = sum(terms)  # fused_score
    multiplier = recency * status * weight
    return (
        -(fused * multiplier),  # final_score
        -fused,
        -multiplier,
        *(-term for term in terms),
        -recency,
        -status,
        -weight,
        cand.doc_id,
    )


def signal_terms(cand: Candidate) -> tuple[float, float, float, float]:
    """(keywords with the bridge, vector, entity, paraphrase): what fused_score adds up."""
    vector = cand.vector[1] if cand.vector is not None else 0.0
    if cand.estimate is not None:
        vector = max(vector, cand.estimate)
    entity = cand.entity[1] if cand.entity is not None else 0.0
    paraphrase = cand.paraphrase[1] if cand.paraphrase is not None else 0.0
    return keyword_score(cand), vector, entity, paraphrase


def fused_score(cand: Candidate) -> float:
    """The sum of the signals' terms, but a document the keywords found only through
    synonyms counts the better of that and the bridge, not both: a synonym and a
    translation are two renderings of the same query word, and summing them would lift a
    note that holds neither typed word above the one that does. (Keywords and bridge do add
    up when they match different words, as when a Japanese claim shares "p53" with an
    English abstract and the bridge finds the rest.)"""
    return sum(signal_terms(cand))


def keyword_score(cand: Candidate) -> float:
    """The keywords' and the bridge's part of fused_score."""
    keyword = [s[1] for s in (cand.fts, cand.bridge) if s is not None]
    return max(keyword, default=0.0) if cand.synonym_only else sum(keyword)
