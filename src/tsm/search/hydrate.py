"""Hydrate: turn the chosen candidates into Hits with one batched read for the whole page
(store.hits.hit_rows: passages, the lines they start on, chunk counts, tags, whole texts)
and two for the links around it (related.py), after checking that their files are still
as indexed."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..models import Hit, ScoreBreakdown, Source
from ..statedir import note_file
from ..store import hits as rows
from ..store.connect import Connection
from ..store.names import stored_aliases
from .coverage import TermCoverage
from .related import LinkedDocument, related_documents
from .results import Scored
from .snippets import make_snippet


def select_fresh(
    scored: list[Scored], top_k: int, root: os.PathLike[str] | None, warnings: list[str]
) -> list[Scored]:
    """The first top_k whose files still exist; changed files are kept but marked stale.
    `root=None` skips the check (benchmarks over files that cannot change)."""
    chosen: list[Scored] = []
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
    chosen: list[Scored],
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
    content_of = [s.cand.doc_id for s in chosen[:include_content]]
    conditions = coverage.conditions() if coverage else None
    passages = rows.hit_rows(conn, chunk_ids, content_of, conditions or ())
    if coverage and conditions is not None:
        coverage.take({c: row.matches for c, row in passages.items()})
    covered = coverage.per_chunk(chunk_ids) if coverage else {}
    related = related_documents(
        conn,
        [
            LinkedDocument(
                s.cand.doc_id, s.doc.path, s.doc.title, stored_aliases(s.doc.aliases, s.doc.path)
            )
            for s in chosen
        ],
    )
    hits = []
    for item in chosen:
        cand, doc = item.cand, item.doc
        passage = passages[item.chunk_id]
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
            passage.page,
            passage.chunk_index,
            passage.total_chunks,
            passage.tags,
            doc.category,
            doc.status,
            doc.created,
            doc.updated,
            item.stale,
            passage.line,
        )
        hits.append(
            Hit(
                item.chunk_id,
                round(item.score, 6),
                breakdown,
                passage.text,
                source,
                passage.section,
                make_snippet(passage.text, terms),
                related[cand.doc_id],
                passage.content,
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
