"""search(): run the signals, fuse them, apply filters and multipliers, check that the
files behind the results are still as indexed, and build the SearchResult."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import Settings
from ..embed import Embedder
from ..errors import EmbedderUnavailable
from ..models import Hit, ScoreBreakdown, SearchResult, Source
from ..text.tokenizer import get_tokenizer
from ..workspace import StatePaths
from . import fuse
from .coverage import TermCoverage
from .entities import entity_documents
from .fts import fts_hits, match_expression
from .query import Filters, Query
from .related import LinkGraph
from .snippets import make_snippet
from .synonyms import expand, load_synonyms
from .vector import load_index

CATEGORY_HALF_LIFE = {"daily": 90.0, "journal": 90.0}


@dataclass
class SearchContext:
    """What a search needs besides the query. `embedder` is called only when vectors are."""

    conn: sqlite3.Connection
    settings: Settings
    embedder: Callable[[], Embedder | None]
    now: dt.datetime = field(default_factory=dt.datetime.now)
    check_files: bool = True


@dataclass
class _Candidate:
    doc_id: int
    fts: tuple[int, float] | None = None  # (chunk id, rrf contribution)
    vector: tuple[int, float] | None = None
    entity: tuple[int, float] | None = None
    similarity: float | None = None  # cosine of the best chunk, when vectors were used


def filter_sql(filters: Filters) -> tuple[str, list[object]]:
    """A WHERE clause over `c` (chunks) and `d` (documents) and its parameters."""
    clauses: list[str] = ["1"]
    params: list[object] = []
    date_expr = "COALESCE(c.chunk_date, d.doc_date)"
    if filters.after:
        clauses.append(f"{date_expr} >= ?")
        params.append(filters.after.isoformat())
    if filters.before:
        clauses.append(f"{date_expr} <= ?")
        params.append(filters.before.isoformat())
    if filters.paths:
        ors = []
        for prefix in filters.paths:
            ors.append("(d.path = ? OR substr(d.path, 1, ?) = ?)")
            params += [prefix, len(prefix) + 1, prefix + "/"]
        clauses.append("(" + " OR ".join(ors) + ")")
    for tag in filters.tags:
        clauses.append("d.id IN (SELECT document_id FROM tags WHERE tag = ? OR "
                       "substr(tag, 1, ?) = ?)")
        params += [tag, len(tag) + 1, tag + "/"]
    if filters.types:
        clauses.append(f"d.type IN ({','.join('?' * len(filters.types))})")
        params += list(filters.types)
    return " AND ".join(clauses), params


def search(ctx: SearchContext, query: Query) -> SearchResult:
    started = time.perf_counter()
    settings = ctx.settings
    warnings: list[str] = []
    tokenizer = get_tokenizer(StatePaths(settings.state_dir).user_dict)
    terms = tokenizer.query_terms(query.text)
    where, params = filter_sql(query.filters)
    k = settings.get("search.rrf_k")
    depth = max(settings.get("search.candidates"), 3 * query.top_k)
    mode = query.mode
    candidates: dict[int, _Candidate] = {}
    total = 0

    if not query.text.strip():
        return _finish(ctx, query, _recent(ctx.conn, where, params, query.top_k, k), "recent",
                       terms, warnings, started, None, None)
    if not terms and mode != "vector":
        warnings.append("the query has no searchable words")

    fts_ranked: list[tuple[int, int, float]] = []
    entity_ranked: list[int] = []
    if mode in ("hybrid", "fts") and terms:
        expression = match_expression(terms)
        assert expression is not None
        fts_ranked, total = fts_hits(ctx.conn, expression, where, params, depth)
        extra = expand(terms, load_synonyms(StatePaths(settings.state_dir).synonyms,
                                            tokenizer.query_terms))
        if extra:  # expansion-only hits rank after every exact hit
            synonym_expr = match_expression(extra)
            assert synonym_expr is not None
            more, more_total = fts_hits(ctx.conn, synonym_expr, where, params, depth)
            exact = {d for _, d, _ in fts_ranked}
            fts_ranked += [h for h in more if h[1] not in exact][: depth - len(fts_ranked)]
            total += sum(1 for h in more if h[1] not in exact) + max(0, more_total - len(more))
        entity_ranked = entity_documents(ctx.conn, query.text, terms, where, params)

    vec_ranked: list[tuple[int, int, float]] = []
    if mode in ("hybrid", "vector"):
        vec_ranked, mode = _vector_signal(ctx, query, where, params, depth, warnings)

    coverage = TermCoverage(ctx.conn, terms)
    fts_weight = 1.0
    if mode == "hybrid" and fts_ranked and vec_ranked:
        fts_weight = coverage.best([c for c, _, _ in fts_ranked[:3]])
    for rank, (chunk_id, doc_id, _) in enumerate(fts_ranked, start=1):
        candidates.setdefault(doc_id, _Candidate(doc_id)).fts = (
            chunk_id, fuse.rrf(rank, k, fts_weight))
    for rank, (chunk_id, doc_id, similarity) in enumerate(vec_ranked, start=1):
        cand = candidates.setdefault(doc_id, _Candidate(doc_id))
        cand.vector, cand.similarity = (chunk_id, fuse.rrf(rank, k)), similarity
    for rank, doc_id in enumerate(entity_ranked, start=1):
        first_chunk = ctx.conn.execute(
            "SELECT id FROM chunks WHERE document_id = ? ORDER BY chunk_index LIMIT 1",
            (doc_id,)).fetchone()[0]
        candidates.setdefault(doc_id, _Candidate(doc_id)).entity = (first_chunk,
                                                                    fuse.rrf(rank, k))
    total = max(total, 0) + sum(1 for c in candidates.values() if c.fts is None)
    return _finish(ctx, query, list(candidates.values()), mode, terms, warnings, started, total,
                   coverage if terms else None)


def _vector_signal(ctx: SearchContext, query: Query, where: str, params: list[object],
                   depth: int, warnings: list[str]) -> tuple[list[tuple[int, int, float]], str]:
    """Nearest chunks, or an FTS-only fallback (per --fallback) when vectors are unavailable."""
    try:
        embedder = ctx.embedder()
        if embedder is None:
            raise EmbedderUnavailable("no embedding model is configured (embedding.model = none)")
        index = load_index(ctx.conn, str(ctx.settings.db_path), embedder.name)
        if index.matrix.shape[0] == 0:
            raise EmbedderUnavailable(f"no chunk has a vector from {embedder.name} yet",
                                      "run `tsm index` (or `tsm reindex vectors`)")
        qvec = embedder.embed_query(query.text)
    except EmbedderUnavailable as exc:
        if query.mode == "vector" or query.fallback == "error":
            raise EmbedderUnavailable(
                f"vector search unavailable: {exc.message}",
                exc.hint or "use --fallback fts-only or --fts-only to search keywords only",
            ) from None
        warnings.append(f"vector search unavailable, keyword results only: {exc.message}")
        return [], "fts"
    allowed = None
    if query.filters.active:
        import numpy as np

        allowed = np.fromiter((r[0] for r in ctx.conn.execute(
            f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE {where}",
            params)), dtype=np.int64)
    missing = int(ctx.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]) - \
        index.matrix.shape[0]
    if missing > 0:
        warnings.append(f"{missing} chunks have no vector yet; they are found by keywords only")
    return index.nearest(qvec, depth, allowed), query.mode


def _recent(conn: sqlite3.Connection, where: str, params: list[object], top_k: int,
            k: int) -> list[_Candidate]:
    """A query made only of a time expression: the most recent matching documents."""
    rows = conn.execute(
        f"""SELECT d.id, MIN(c.id) FROM documents d JOIN chunks c ON c.document_id = d.id
            WHERE {where} GROUP BY d.id
            ORDER BY MAX(COALESCE(c.chunk_date, d.doc_date)) DESC, d.id DESC LIMIT ?""",
        (*params, top_k),
    ).fetchall()
    return [_Candidate(doc_id, fts=(chunk_id, fuse.rrf(rank, k)))
            for rank, (doc_id, chunk_id) in enumerate(rows, start=1)]


def _multipliers(ctx: SearchContext, category: str, path: str, status: str | None,
                 date: str | None, doc_type: str) -> tuple[float, float, float]:
    settings = ctx.settings
    weight, half_life = 1.0, CATEGORY_HALF_LIFE.get(category) or \
        settings.get("ranking.half_life_days")
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
            age = (ctx.now.date() - dt.date.fromisoformat(date[:10])).days
        except ValueError:
            age = None
    return (fuse.recency(age, half_life), fuse.status_penalty(status, settings.status_weights),
            weight)


def _finish(ctx: SearchContext, query: Query, candidates: list[_Candidate], mode: str,
            terms: list[str], warnings: list[str], started: float,
            total: int | None, coverage: TermCoverage | None) -> SearchResult:
    conn = ctx.conn
    if not candidates:
        return _result(query, (), 0, "hybrid" if mode == "recent" else mode, warnings, started)
    ids = [c.doc_id for c in candidates]
    docs = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
                f"""SELECT id, path, title, type, category, status, created, updated, doc_date,
                        size, mtime, aliases FROM documents WHERE id IN ({marks})""", part):
            docs[row[0]] = row
    scored = []
    for cand in candidates:
        doc = docs.get(cand.doc_id)
        if doc is None:
            continue
        recency, status, weight = _multipliers(ctx, doc[4], doc[1], doc[5], doc[8], doc[3])
        fts = cand.fts[1] if cand.fts else 0.0
        vec = cand.vector[1] if cand.vector else 0.0
        entity = cand.entity[1] if cand.entity else 0.0
        final = (fts + vec + entity) * recency * status * weight
        signals = [s for s in (cand.fts, cand.vector, cand.entity) if s is not None]
        chunk = max(signals, key=lambda s: s[1])[0]  # the passage the strongest signal chose
        scored.append((final, cand, doc, chunk, (recency, status, weight)))
    scored.sort(key=lambda s: (-s[0], s[1].doc_id))
    hits: list[Hit] = []
    shown: set[int] = set()
    graph = LinkGraph(conn)
    for final, cand, doc, chunk_id, (recency, status, weight) in scored:
        if len(hits) >= query.top_k:
            break
        stale = False
        if ctx.check_files and doc[3] != "session":
            fresh = _freshness(ctx.settings.index_root / doc[1], doc[9], doc[10])
            if fresh == "missing":
                warnings.append(f"{doc[1]} no longer exists; dropped from the results")
                continue
            if fresh == "changed":
                stale = True
                warnings.append(f"{doc[1]} changed since it was indexed; run `tsm index`")
        chunk = conn.execute(
            "SELECT chunk_index, section, page, text FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        n_chunks, tags = _doc_extras(conn, cand.doc_id)
        use_fts = mode in ("hybrid", "fts", "recent") and query.mode != "vector"
        breakdown = ScoreBreakdown(
            fts=round(cand.fts[1], 6) if cand.fts else (0.0 if use_fts else None),
            vector=round(cand.vector[1], 6) if cand.vector else
            (0.0 if mode in ("hybrid", "vector") else None),
            recency=round(recency, 4), status=status, weight=weight,
            entity=round(cand.entity[1], 6) if cand.entity else None,
            similarity=round(cand.similarity, 4) if cand.similarity is not None else None,
        )
        source = Source(cand.doc_id, doc[2], doc[1], doc[3], chunk[2], chunk[0], n_chunks,
                        tags, doc[4], doc[5], doc[6], doc[7], stale)
        shown.add(cand.doc_id)
        hits.append(Hit(chunk_id, round(final, 6), breakdown, chunk[3], source, chunk[1],
                        make_snippet(chunk[3], terms), (),
                        _content(conn, cand.doc_id) if len(hits) < query.include_content
                        else None))
    covered = coverage.per_chunk([h.chunk_id for h in hits]) if coverage else {}
    final_hits = tuple(
        _with_related(graph, h, docs[h.source.document_id], shown, covered.get(h.chunk_id))
        for h in hits)
    dropped = len(scored) - len(final_hits)
    total_matches = max(total if total is not None else len(scored), len(final_hits))
    if mode == "recent":
        total_matches = len(final_hits)
    del dropped
    return _result(query, final_hits, total_matches, "hybrid" if mode == "recent" else mode,
                   warnings, started)


def _with_related(graph: LinkGraph, hit: Hit, doc: tuple[Any, ...], shown: set[int],
                  coverage: float | None) -> Hit:
    related = graph.related(hit.source.document_id, doc[1], doc[2], json.loads(doc[11] or "[]"),
                            shown)
    breakdown = replace(hit.score_breakdown,
                        coverage=round(coverage, 4) if coverage is not None else None)
    return replace(hit, related=related, score_breakdown=breakdown)


def _doc_extras(conn: sqlite3.Connection, doc_id: int) -> tuple[int, tuple[str, ...]]:
    n = conn.execute("SELECT COUNT(*) FROM chunks WHERE document_id = ?", (doc_id,)).fetchone()[0]
    tags = tuple(r[0] for r in conn.execute(
        "SELECT tag FROM tags WHERE document_id = ? ORDER BY tag", (doc_id,)))
    return int(n), tags


def _content(conn: sqlite3.Connection, doc_id: int) -> str:
    return str(conn.execute("SELECT text FROM documents WHERE id = ?", (doc_id,)).fetchone()[0])


def _freshness(path: os.PathLike[str], size: int, mtime: float) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "ok"
    return "ok" if (st.st_size == size and st.st_mtime == mtime) else "changed"


def _result(query: Query, hits: tuple[Hit, ...], total: int, mode: str, warnings: list[str],
            started: float) -> SearchResult:
    return SearchResult(
        query=query.original, results=hits, total_matches=total, mode=mode,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
        filters=query.filters.as_json() | ({"query_text": query.text}
                                           if query.text != query.original else {}),
        warnings=tuple(dict.fromkeys(warnings)),
    )
