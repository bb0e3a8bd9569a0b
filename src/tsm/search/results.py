"""From fused candidates to Hits: apply the score multipliers, pick the top-k whose files
still exist, and fetch their chunks, tags, snippets and related documents in batches."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import Settings
from ..models import Hit, ScoreBreakdown, Source
from ..statedir import note_file
from ..store import hits as rows
from ..store.connect import Connection
from ..store.hits import ResultDocument
from ..store.names import stored_aliases
from . import fuse
from .related import LinkGraph
from .snippets import make_snippet

if TYPE_CHECKING:
    from .coverage import TermCoverage

CATEGORY_HALF_LIFE = {"daily": 90.0, "journal": 90.0}


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


Ranking = Sequence[tuple[int, int, float]]  # (chunk id, document id, score), best first


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
class _Scored:
    score: float
    cand: Candidate
    doc: ResultDocument
    chunk_id: int
    recency: float
    status: float
    weight: float
    stale: bool = False


def multipliers(
    settings: Settings, now: dt.datetime, doc: ResultDocument
) -> tuple[float, float, float]:
    """(recency, status, weight) for a document."""
    path, doc_type, category, status = doc.path, doc.type, doc.category, doc.status
    date = doc.doc_date
    weight = 1.0
    half_life = CATEGORY_HALF_LIFE.get(category) or settings.get("ranking.half_life_days")
    for content_dir in settings.content_dirs:
        if path == content_dir.path or path.startswith(content_dir.path.rstrip("/") + "/"):
            weight = content_dir.weight
            if content_dir.half_life_days is not None:
                half_life = content_dir.half_life_days
    if doc_type == "session":
        weight *= settings.get("sessions.weight")
        half_life = settings.get("sessions.half_life_days")
    age = None
    if date:
        try:
            age = (now.date() - dt.date.fromisoformat(date[:10])).days
        except ValueError:
            age = None
    return (
        fuse.recency(age, half_life),
        fuse.status_penalty(status, settings.status_weights),
        weight,
    )


def rank_candidates(
    conn: Connection, settings: Settings, now: dt.datetime, candidates: list[Candidate]
) -> list[_Scored]:
    """Final score = fused RRF × recency × status × weight, best first."""
    docs = rows.documents_by_id(conn, [c.doc_id for c in candidates])
    scored = []
    for cand in candidates:
        doc = docs.get(cand.doc_id)
        if doc is None or not found(cand):
            continue
        recency, status, weight = multipliers(settings, now, doc)
        signals = [
            s
            for s in (cand.fts, cand.vector, cand.entity, cand.bridge, cand.paraphrase)
            if s is not None
        ]
        chunk_id = max(signals, key=lambda s: s[1])[0]  # the passage the strongest signal chose
        score = final_score(cand, recency, status, weight)
        scored.append(_Scored(score, cand, doc, chunk_id, recency, status, weight))
    scored.sort(key=lambda s: order_key(s.cand, s.recency, s.status, s.weight))
    return scored


def found(cand: Candidate) -> bool:
    """Whether a signal found the document. The vector side lists the nearest chunks
    whatever they are; one no nearer to the query than the query's mean chunk (the floor of
    fuse.score_scaled_rrf) earns a vector term of 0, and with no other signal it is no result,
    only a neighbour."""
    if any(s is not None for s in (cand.fts, cand.entity, cand.bridge, cand.paraphrase)):
        return True
    return fused_score(cand) > 0.0


def final_score(cand: Candidate, recency: float, status: float, weight: float) -> float:
    """The fused signals times the multipliers: rising in every signal's term and in every
    multiplier, so a hit at least as good as another on each never scores below it."""
    return fused_score(cand) * (recency * status * weight)


def order_key(cand: Candidate, recency: float, status: float, weight: float) -> tuple[float, ...]:
    """Best first: by final score; where scores tie (hits no signal scored above its floor,
    or a difference rounding swallowed), by the fused terms, then each signal's term and
    each multiplier, so that a hit better on some signal and as good on the rest still
    comes first; the document id last, for a stable order between equals."""
    fused = fused_score(cand)
    multiplier = recency * status * weight
    return (
        -final_score(cand, recency, status, weight),
        -fused,
        -multiplier,
        *(-term for term in signal_terms(cand)),
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


def select_fresh(
    scored: list[_Scored], top_k: int, root: os.PathLike[str] | None, warnings: list[str]
) -> list[_Scored]:
    """The first top_k whose files still exist; changed files are kept but marked stale.
    `root=None` skips the check (benchmarks over files that cannot change)."""
    chosen: list[_Scored] = []
    for item in scored:
        if len(chosen) >= top_k:
            break
        path, doc_type, size, mtime = item.doc.path, item.doc.type, item.doc.size, item.doc.mtime
        if root is not None and doc_type != "session" and item.doc.local:
            file = note_file(root, path)
            if file is None:  # a damaged or planted index: nothing outside the root is read
                warnings.append(
                    f"{path!r} is no path inside the index root (a damaged index; "
                    "`tsm rebuild --apply` rebuilds it); dropped from the results"
                )
                continue
            state = _freshness(file, size, mtime)
            if state == "missing":
                warnings.append(f"{path} no longer exists; dropped from the results")
                continue
            if state == "changed":
                item.stale = True
                warnings.append(f"{path} changed since it was indexed; run `tsm index`")
        chosen.append(item)
    return chosen


def build_hits(
    conn: Connection,
    chosen: list[_Scored],
    *,
    signals: tuple[bool, bool],
    terms: list[str],
    coverage: TermCoverage | None,
    include_content: int,
    generic: float | None = None,
    noise: float | None = None,
    named: Callable[[str], bool] | None = None,
    drop: float | None = None,
    distinct: Callable[[str], int] | None = None,
) -> tuple[Hit, ...]:
    """Hits for the chosen documents. `signals` says whether (fts, vector) ran, so a signal
    that ran but missed a document reports 0.0 and one that did not run reports None.
    `generic` is the query's best cosine with a generic request, `noise` the vault's level
    of generic relevance, `named` whether the query names a path (relevance.py), `drop`
    how clearly the vector ranking's top stands out (fuse.vector_drop), `distinct` how many
    path words the query names that no generic request uses."""
    if not chosen:
        return ()
    chunk_ids = [s.chunk_id for s in chosen]
    doc_ids = [s.cand.doc_id for s in chosen]
    chunks = rows.chunks_by_id(conn, chunk_ids)
    counts = rows.chunk_counts(conn, doc_ids)
    tags = rows.tags_by_document(conn, doc_ids)
    covered = coverage.per_chunk(chunk_ids) if coverage else {}
    graph = LinkGraph(conn)
    shown = set(doc_ids)
    hits = []
    for position, item in enumerate(chosen):
        cand, doc = item.cand, item.doc
        _, chunk_index, section, page, text = chunks[item.chunk_id]
        breakdown = ScoreBreakdown(
            fts=_contribution(cand.fts, signals[0]),
            vector=_contribution(cand.vector, signals[1]),
            recency=round(item.recency, 4),
            status=item.status,
            weight=item.weight,
            entity=round(cand.entity[1], 6) if cand.entity else None,
            bridge=round(cand.bridge[1], 6) if cand.bridge else None,
            paraphrase=round(cand.paraphrase[1], 6) if cand.paraphrase else None,
            similarity=round(cand.similarity, 4) if cand.similarity is not None else None,
            coverage=round(covered[item.chunk_id], 4) if item.chunk_id in covered else None,
            relevance=(
                round(cand.similarity - generic, 4)
                if cand.similarity is not None and generic is not None
                else None
            ),
            noise=noise,
            named=named(doc.path) if named is not None else None,
            vector_drop=drop,
            distinct_names=distinct(doc.path) if distinct is not None else None,
        )
        source = Source(
            cand.doc_id,
            doc.title,
            doc.path,
            doc.type,
            page,
            chunk_index,
            counts.get(cand.doc_id, 0),
            tuple(tags.get(cand.doc_id, ())),
            doc.category,
            doc.status,
            doc.created,
            doc.updated,
            item.stale,
        )
        related = graph.related(
            cand.doc_id, doc.path, doc.title, stored_aliases(doc.aliases, doc.path), shown
        )
        content = rows.document_text(conn, cand.doc_id) if position < include_content else None
        hits.append(
            Hit(
                item.chunk_id,
                round(item.score, 6),
                breakdown,
                text,
                source,
                section,
                make_snippet(text, terms),
                related,
                content,
            )
        )
    return tuple(hits)


def _contribution(signal: tuple[int, float] | None, ran: bool) -> float | None:
    if signal is not None:
        return round(signal[1], 6)
    return 0.0 if ran else None


def _freshness(path: str, size: int, mtime: float) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "ok"
    return "ok" if (st.st_size == size and st.st_mtime == mtime) else "changed"
