#!/usr/bin/env python3
"""Tokenizer bake-off (README design notes): measure Japanese tokenizers for a SQLite-FTS5 search pipeline.

Pipeline under test (same as tsm): NFKC(text) -> Python morphological tokenizer
-> drop POS (particles, auxiliaries, symbols, whitespace) -> space-joined tokens
stored in an FTS5 column with tokenize='porter unicode61 remove_diacritics 2'.
Queries: same Python tokenizer, distinct tokens, each quoted as an FTS5 string,
OR-ed, ranked by bm25(), top 100. Metrics by ranx.

Sub-commands (run with the venv python):
  startup NAME          one fresh-process sample: import / construct / first-call seconds (JSON)
  startup-all [-n 5]    runs `startup` n times per tokenizer in fresh processes, prints medians
  sizes                 installed size per candidate (sum of files of the wheels' RECORDs)
  quality [VARIANT...]  speed + nDCG@10/Recall@100/MRR@10 on jaquad and jaquad-para ja01-ja40
  segment               hand checks (segmentation table, FTS5 hit check, NFKC)
  threads               thread-safety / fork checks
  userdict              build+load a one-entry user dictionary for each tokenizer
  compare SET [RUN...]  paired t-test between saved runs (SET = jaquad | jaquad-para-ja)
  speed [ANALYZER...]   tokenization throughput only (run on an idle machine)
  report                markdown tables from results/
  list                  list variant names
Results are written as JSON under bench/.cache/tokenizers/. Run it in a separate venv with
the candidates installed: sudachipy sudachidict-core fugashi unidic-lite lindera-python-ipadic
janome ranx (see bench/results/tokenizers.md for the exact commands).
"""

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / ".cache" / "tokenizers"
DATA = HERE.parent.parent / "shared" / "datasets"

# --------------------------------------------------------------------------------------
# Analyzers. Each returns list of (surface, normalized_or_lemma, pos1, pos2) for a text.
# --------------------------------------------------------------------------------------

SUDACHI_MAX_BYTES = 40000  # Sudachi refuses very long inputs; chunk at newlines below this.


def _chunks(text, max_bytes):
    if len(text.encode("utf-8")) <= max_bytes:
        yield text
        return
    buf, size = [], 0
    for line in text.splitlines(keepends=True):
        b = len(line.encode("utf-8"))
        if size + b > max_bytes and buf:
            yield "".join(buf)
            buf, size = [], 0
        while b > max_bytes:  # a single enormous line: hard cut on characters
            cut = max_bytes // 4
            yield line[:cut]
            line = line[cut:]
            b = len(line.encode("utf-8"))
        buf.append(line)
        size += b
    if buf:
        yield "".join(buf)


class Sudachi:
    family = "unidic"  # POS tag set (UniDic-style: 補助記号, 空白)

    def __init__(self, mode="A", expand_c=False, dict_name="core", config=None):
        from sudachipy import Dictionary, SplitMode

        self.SplitMode = SplitMode
        self.dic = (
            Dictionary(dict=dict_name, config=config) if config else Dictionary(dict=dict_name)
        )
        self.mode = mode
        self.expand_c = expand_c
        m = getattr(SplitMode, "C" if expand_c else mode)
        self.tok = self.dic.tokenizer(mode=m)

    def analyze(self, text):
        out = []
        A = self.SplitMode.A
        for chunk in _chunks(text, SUDACHI_MAX_BYTES):
            for m in self.tok.tokenize(chunk):
                pos = m.part_of_speech()
                if self.expand_c:
                    parts = m.split(A)
                    if len(parts) > 1:
                        for p in parts:
                            pp = p.part_of_speech()
                            out.append((p.surface(), p.normalized_form(), pp[0], pp[1]))
                        # the C-unit compound itself, as an extra token
                        out.append((m.surface(), m.normalized_form(), pos[0], pos[1]))
                        continue
                out.append((m.surface(), m.normalized_form(), pos[0], pos[1]))
        return out


class Fugashi:
    family = "unidic"

    def __init__(self):
        import fugashi

        self.tagger = fugashi.Tagger()  # picks unidic-lite when full unidic is absent

    def analyze(self, text):
        out = []
        for w in self.tagger(text):
            f = w.feature
            lemma = f.lemma if f.lemma else w.surface
            # unidic lemma of loanwords carries a gloss: 'アプリ-application'; strip it
            if "-" in lemma and not w.surface.count("-"):
                lemma = lemma.split("-", 1)[0]
            out.append((w.surface, lemma, f.pos1, f.pos2))
        return out


class LinderaIpadic:
    family = "ipadic"

    def __init__(self, user_dict=None):
        import lindera

        b = lindera.TokenizerBuilder().set_mode("normal").set_dictionary("embedded://ipadic")
        if user_dict:
            b = b.set_user_dictionary(user_dict)
        self.tok = b.build()

    def analyze(self, text):
        out = []
        for t in self.tok.tokenize(text):
            d = t.details
            base = d[6] if len(d) > 6 and d[6] != "*" else t.surface
            out.append((t.surface, base, d[0], d[1] if len(d) > 1 else "*"))
        return out


class Janome:
    family = "ipadic"

    def __init__(self):
        from janome.tokenizer import Tokenizer

        self.tok = Tokenizer()

    def analyze(self, text):
        out = []
        for t in self.tok.tokenize(text):
            p = t.part_of_speech.split(",")
            base = t.base_form if t.base_form != "*" else t.surface
            out.append((t.surface, base, p[0], p[1]))
        return out


class CharBigram:
    """Control: the README's BM25 reference tokenization (bigrams inside runs), run through FTS5."""

    family = "none"

    def analyze(self, text):
        import re

        out = []
        for run in re.split(r"[\W_]+", text.lower()):
            if not run:
                continue
            if len(run) == 1:
                out.append((run, run, "x", "*"))
            else:
                for i in range(len(run) - 1):
                    out.append((run[i : i + 2], run[i : i + 2], "x", "*"))
        return out


ANALYZERS = {
    "sudachi-A": lambda: Sudachi("A"),
    "sudachi-B": lambda: Sudachi("B"),
    "sudachi-C": lambda: Sudachi("C"),
    "sudachi-A+C": lambda: Sudachi("A", expand_c=True),
    "fugashi-unidiclite": Fugashi,
    "lindera-ipadic": LinderaIpadic,
    "janome": Janome,
    "bigram": CharBigram,
}

# --------------------------------------------------------------------------------------
# POS filters (applied to documents AND queries).
# --------------------------------------------------------------------------------------
DROP_FUNC = {
    # UniDic-style tag set (Sudachi, unidic-lite). NOT 記号: unidic-lite tags some kanji/kana
    # (鹿, 猪, ヶ, 之) and Greek letters as 記号; pure punctuation is removed by the alnum rule below.
    "unidic": {"助詞", "助動詞", "補助記号", "空白"},
    # IPADIC (lindera, janome): 記号 also holds アルファベット (single Latin letters); same alnum rule.
    "ipadic": {"助詞", "助動詞"},
    "none": set(),
}


def _has_alnum(s):
    return any(ch.isalnum() for ch in s)


# stricter: also drop pronouns, interjections, fillers, conjunctions and the most common light verbs
DROP_STRICT_EXTRA = {"代名詞", "感動詞", "フィラー", "接続詞"}
LIGHT = {
    "する",
    "ある",
    "いる",
    "なる",
    "れる",
    "られる",
    "できる",
    "為る",
    "有る",
    "居る",
    "成る",
    "出来る",
}


def make_filter(kind, family):
    if kind == "none" or family == "none":
        return lambda s, n, p1, p2: True  # FTS5 unicode61 drops pure punctuation by itself
    drop = DROP_FUNC[family]
    if kind == "func":
        return lambda s, n, p1, p2: p1 not in drop and _has_alnum(s)
    if kind == "strict":
        drop2 = drop | DROP_STRICT_EXTRA
        return lambda s, n, p1, p2: (
            p1 not in drop2 and _has_alnum(s) and not (p1 == "動詞" and n in LIGHT)
        )
    if kind == "content":  # nouns, verbs, adjectives, adverbs, prefixes/suffixes only
        keep = {
            "名詞",
            "動詞",
            "形容詞",
            "形状詞",
            "形容動詞",
            "副詞",
            "接頭辞",
            "接頭詞",
            "接尾辞",
            "連体詞",
        }
        return lambda s, n, p1, p2: p1 in keep and _has_alnum(s)
    raise ValueError(kind)


# variant = analyzer, form (surface|norm), pos filter, nfkc
VARIANTS = {
    "bigram(FTS5 control)": ("bigram", "surface", "none", True),
    "sudachi-A": ("sudachi-A", "surface", "func", True),
    "sudachi-B": ("sudachi-B", "surface", "func", True),
    "sudachi-C": ("sudachi-C", "surface", "func", True),
    "sudachi-A+C": ("sudachi-A+C", "surface", "func", True),
    "sudachi-A norm": ("sudachi-A", "norm", "func", True),
    "sudachi-A+C norm": ("sudachi-A+C", "norm", "func", True),
    "sudachi-A hybrid": ("sudachi-A", "hybrid", "func", True),
    "sudachi-A+C hybrid": ("sudachi-A+C", "hybrid", "func", True),
    "sudachi-A hybrid strict": ("sudachi-A", "hybrid", "strict", True),
    "fugashi-unidiclite hybrid": ("fugashi-unidiclite", "hybrid", "func", True),
    "sudachi-A nofilter": ("sudachi-A", "surface", "none", True),
    "sudachi-A strict": ("sudachi-A", "surface", "strict", True),
    "sudachi-A content": ("sudachi-A", "surface", "content", True),
    "sudachi-A noNFKC": ("sudachi-A", "surface", "func", False),
    "fugashi-unidiclite": ("fugashi-unidiclite", "surface", "func", True),
    "fugashi-unidiclite lemma": ("fugashi-unidiclite", "norm", "func", True),
    "fugashi-unidiclite nofilter": ("fugashi-unidiclite", "surface", "none", True),
    "lindera-ipadic base": ("lindera-ipadic", "norm", "func", True),
    "lindera-ipadic": ("lindera-ipadic", "surface", "func", True),
    "janome": ("janome", "surface", "func", True),
}

# --------------------------------------------------------------------------------------
# Data, FTS5, evaluation
# --------------------------------------------------------------------------------------


def load_jsonl(p):
    with open(p, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def load_qrels(p):
    q = {}
    with open(p, encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, s = line.rstrip("\n").split("\t")
            if int(s) > 0:
                q.setdefault(qid, {})[did] = int(s)
    return q


def prep(text, nfkc):
    return unicodedata.normalize("NFKC", text) if nfkc else text


import re

_JA = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005\u3006\u30fc]")


def to_terms(analysis, form, flt):
    """form: 'surface' | 'norm' (normalized/lemma) | 'hybrid' (norm only when the surface has Japanese
    script; Latin/digit tokens keep their surface so FTS5's porter stemmer sees real English words —
    Sudachi's normalized_form turns English words into katakana: Running -> ランニング)."""
    terms = []
    for a in analysis:
        if not flt(*a):
            continue
        if form == "surface":
            t = a[0]
        elif form == "norm":
            t = a[1]
        else:
            t = a[1] if _JA.search(a[0]) else a[0]
        t = t.strip()
        if t:
            terms.append(t)
    return terms


def fts_quote(t):
    return '"' + t.replace('"', '""') + '"'


def build_index(doc_terms):
    con = sqlite3.connect(":memory:")
    con.execute(
        "CREATE VIRTUAL TABLE d USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')"
    )
    con.executemany(
        "INSERT INTO d(rowid, body) VALUES (?, ?)",
        ((i, " ".join(ts)) for i, ts in enumerate(doc_terms)),
    )
    return con


def search(con, terms, k=100):
    seen, uniq = set(), []
    for t in terms:
        key = t.casefold()
        if key not in seen:
            seen.add(key)
            uniq.append(t)
    if not uniq:
        return []
    q = " OR ".join(fts_quote(t) for t in uniq)
    return con.execute(
        "SELECT rowid, bm25(d) FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT ?", (q, k)
    ).fetchall()


def evaluate(qrels, run):
    from ranx import Qrels, Run
    from ranx import evaluate as rx_eval

    # ranx needs every query to have an entry; empty results -> no entry; make_comparable fills them
    r = Run({q: d for q, d in run.items() if d} or {"__none__": {"__none__": 0.0}})
    res = rx_eval(Qrels(qrels), r, ["ndcg@10", "recall@100", "mrr@10"], make_comparable=True)
    return {k: round(float(v), 4) for k, v in res.items()}


def run_variant(vname, corpus, queries_sets, analyzer_cache):
    aname, form, fkind, nfkc = VARIANTS[vname]
    if aname not in analyzer_cache:
        analyzer_cache[aname] = ANALYZERS[aname]()
    an = analyzer_cache[aname]
    flt = make_filter(fkind, an.family)
    texts = [prep(d["title"] + " " + d["text"], nfkc) for d in corpus]
    # speed: tokenize the whole corpus (title + text), extracting surface/normalized/POS
    reps = 1 if aname == "janome" else 3
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        analyses = [an.analyze(t) for t in texts]
        times.append(time.perf_counter() - t0)
    sec = statistics.median(times)
    ntok = sum(len(a) for a in analyses)
    nch = sum(len(t) for t in texts)
    doc_terms = [to_terms(a, form, flt) for a in analyses]
    t0 = time.perf_counter()
    con = build_index(doc_terms)
    idx_sec = time.perf_counter() - t0
    ids = [d["_id"] for d in corpus]
    out = {
        "variant": vname,
        "analyzer": aname,
        "form": form,
        "pos_filter": fkind,
        "nfkc": nfkc,
        "tokenize_sec": round(sec, 3),
        "tokens": ntok,
        "chars": nch,
        "tokens_per_s": round(ntok / sec),
        "chars_per_s": round(nch / sec),
        "indexed_terms": sum(len(x) for x in doc_terms),
        "fts_insert_sec": round(idx_sec, 3),
    }
    for setname, (queries, qrels) in queries_sets.items():
        run, qtime, empty, errors = {}, 0.0, 0, 0
        for q in queries:
            t0 = time.perf_counter()
            terms = to_terms(an.analyze(prep(q["text"], nfkc)), form, flt)
            try:
                hits = search(con, terms)
            except sqlite3.OperationalError:
                hits, errors = [], errors + 1
            qtime += time.perf_counter() - t0
            if not hits:
                empty += 1
            run[q["_id"]] = {ids[r]: -s for r, s in hits}
        m = evaluate(qrels, run)
        rdir = RESULTS / "runs"
        rdir.mkdir(parents=True, exist_ok=True)
        (rdir / f"{setname}__{vname.replace(' ', '_').replace('/', '_')}.json").write_text(
            json.dumps(run)
        )
        out[setname] = dict(
            m,
            empty_queries=empty,
            fts_errors=errors,
            ms_per_query=round(1000 * qtime / len(queries), 3),
        )
    con.close()
    return out


def cmd_quality(names):
    RESULTS.mkdir(exist_ok=True)
    corpus = load_jsonl(DATA / "jaquad/corpus.jsonl")
    qj = load_jsonl(DATA / "jaquad/queries.jsonl")
    qrj = load_qrels(DATA / "jaquad/qrels/test.tsv")
    qp = [q for q in load_jsonl(DATA / "jaquad-para/queries.jsonl") if q["_id"].startswith("ja")]
    qrp = {
        k: v
        for k, v in load_qrels(DATA / "jaquad-para/qrels/test.tsv").items()
        if k.startswith("ja")
    }
    sets = {"jaquad": (qj, qrj), "jaquad-para-ja": (qp, qrp)}
    cache = {}
    names = names or list(VARIANTS)
    for n in names:
        r = run_variant(n, corpus, sets, cache)
        print(json.dumps(r, ensure_ascii=False), flush=True)
        fn = RESULTS / ("quality_" + n.replace(" ", "_").replace("/", "_") + ".json")
        fn.write_text(json.dumps(r, ensure_ascii=False, indent=1))


def cmd_compare(setname="jaquad", names=None):
    """Paired two-sided t-test (ranx.compare) between saved runs of one query set."""
    from ranx import Qrels, Run, compare

    qfile = {"jaquad": "jaquad", "jaquad-para-ja": "jaquad-para"}[setname]
    qrels = load_qrels(DATA / qfile / "qrels/test.tsv")
    if setname == "jaquad-para-ja":
        qrels = {k: v for k, v in qrels.items() if k.startswith("ja")}
    runs = []
    for f in sorted((RESULTS / "runs").glob(f"{setname}__*.json")):
        n = f.stem.split("__", 1)[1]
        if names and n not in names:
            continue
        d = {q: r for q, r in json.loads(f.read_text()).items() if r}
        runs.append(Run(d, name=n))
    rep = compare(
        Qrels(qrels),
        runs,
        metrics=["ndcg@10", "recall@100", "mrr@10"],
        max_p=0.01,
        stat_test="student",
        make_comparable=True,
    )
    print(rep)
    (RESULTS / f"compare_{setname}.txt").write_text(str(rep) + "\n")


def cmd_report():
    """Markdown tables from results/*.json (quality, speed, startup, sizes)."""
    rows = []
    order = list(VARIANTS)
    for f in RESULTS.glob("quality_*.json"):
        rows.append(json.loads(f.read_text()))
    rows.sort(key=lambda r: order.index(r["variant"]) if r["variant"] in order else 99)
    out = [
        "| variant | form | POS filter | NFKC | jaquad nDCG@10 | R@100 | MRR@10 | Δ nDCG vs bm25s ref 0.9158 "
        "| para-ja nDCG@10 | R@100 | MRR@10 | tokens/s | chars/s | corpus tokenize s | indexed terms |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        j, p = r["jaquad"], r["jaquad-para-ja"]
        out.append(
            f"| {r['variant']} | {r['form']} | {r['pos_filter']} | {'y' if r['nfkc'] else 'n'} | "
            f"{j['ndcg@10']:.4f} | {j['recall@100']:.4f} | {j['mrr@10']:.4f} | {j['ndcg@10'] - 0.9158:+.4f} | "
            f"{p['ndcg@10']:.4f} | {p['recall@100']:.4f} | {p['mrr@10']:.4f} | {r['tokens_per_s']:,} | "
            f"{r['chars_per_s']:,} | {r['tokenize_sec']} | {r['indexed_terms']:,} |"
        )
    print("\n".join(out))
    for name in ("speed.json", "startup.json", "sizes.json", "threads.json", "userdict.json"):
        f = RESULTS / name
        if f.exists():
            print(f"\n### {name}\n```\n{f.read_text()}\n```")


def cmd_speed(names=None):
    """Tokenization throughput only (whole jaquad corpus, title + text, NFKC done beforehand), run alone."""
    corpus = load_jsonl(DATA / "jaquad/corpus.jsonl")
    texts = [prep(d["title"] + " " + d["text"], True) for d in corpus]
    nch = sum(len(t) for t in texts)
    res = {}
    t0 = time.perf_counter()
    [unicodedata.normalize("NFKC", d["title"] + " " + d["text"]) for d in corpus]
    res["(NFKC only)"] = {
        "sec": round(time.perf_counter() - t0, 3),
        "chars_per_s": round(nch / (time.perf_counter() - t0)),
    }
    for n in names or [
        "sudachi-A",
        "sudachi-C",
        "sudachi-A+C",
        "fugashi-unidiclite",
        "lindera-ipadic",
        "janome",
    ]:
        an = ANALYZERS[n]()
        reps = 1 if n == "janome" else 5
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            ntok = sum(len(an.analyze(t)) for t in texts)
            ts.append(time.perf_counter() - t0)
        sec = statistics.median(ts)
        res[n] = {
            "sec": round(sec, 3),
            "tokens": ntok,
            "tokens_per_s": round(ntok / sec),
            "chars_per_s": round(nch / sec),
            "reps": reps,
        }
        print(n, res[n], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "speed.json").write_text(json.dumps(res, indent=1))


# --------------------------------------------------------------------------------------
# Start-up cost and install size
# --------------------------------------------------------------------------------------
STARTUP = {
    "sudachi": (
        "import sudachipy",
        "d=sudachipy.Dictionary(dict='core'); t=d.tokenizer(mode=sudachipy.SplitMode.A)",
        "[m.surface() for m in t.tokenize('狩猟免許を取得した。')]",
    ),
    "fugashi-unidiclite": (
        "import fugashi",
        "t=fugashi.Tagger()",
        "[w.surface for w in t('狩猟免許を取得した。')]",
    ),
    "lindera-ipadic": (
        "import lindera",
        "t=lindera.TokenizerBuilder().set_mode('normal').set_dictionary('embedded://ipadic').build()",
        "[x.surface for x in t.tokenize('狩猟免許を取得した。')]",
    ),
    "janome": (
        "from janome.tokenizer import Tokenizer",
        "t=Tokenizer()",
        "[x.surface for x in t.tokenize('狩猟免許を取得した。')]",
    ),
}


def cmd_startup(name):
    imp, cons, call = STARTUP[name]
    g = {}
    t0 = time.perf_counter()
    exec(imp, g)
    t1 = time.perf_counter()
    exec(cons, g)
    t2 = time.perf_counter()
    exec(call, g)
    t3 = time.perf_counter()
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {"import_s": t1 - t0, "construct_s": t2 - t1, "first_call_s": t3 - t2, "maxrss_mb": rss}
        )
    )


def cmd_startup_all(n=5):
    RESULTS.mkdir(exist_ok=True)
    res = {}
    for name in STARTUP:
        samples = []
        for _ in range(n):
            p = subprocess.run(
                [sys.executable, __file__, "startup", name], capture_output=True, text=True
            )
            if p.returncode:
                print(name, "FAILED", p.stderr[-500:])
                break
            samples.append(json.loads(p.stdout.strip().splitlines()[-1]))
        if samples:
            res[name] = {k: round(statistics.median(s[k] for s in samples), 4) for k in samples[0]}
            print(name, res[name], flush=True)
    (RESULTS / "startup.json").write_text(json.dumps(res, indent=1))


SIZES = {
    "sudachi (sudachipy + sudachidict-core)": ["sudachipy", "sudachidict-core"],
    "fugashi + unidic-lite": ["fugashi", "unidic-lite"],
    "lindera-python-ipadic": ["lindera-python-ipadic"],
    "janome": ["janome"],
}


def cmd_sizes():
    from importlib import metadata

    res = {}
    for label, dists in SIZES.items():
        total, parts = 0, {}
        for dn in dists:
            d = metadata.distribution(dn)
            s = 0
            for f in d.files or []:
                p = Path(d.locate_file(f))
                if p.is_file():
                    s += p.stat().st_size
            parts[f"{dn} {d.version}"] = round(s / 2**20, 1)
            total += s
        res[label] = {"MiB": round(total / 2**20, 1), "parts": parts}
        print(label, res[label])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sizes.json").write_text(json.dumps(res, indent=1, ensure_ascii=False))


# --------------------------------------------------------------------------------------
# Hand checks
# --------------------------------------------------------------------------------------
SEG_SAMPLES = [
    "捕獲報告アプリ",
    "東京都庁",
    "機械学習モデル",
    "形態素解析器",
    "ＬｏＲａモジュール",
    "令和6年",
    "令和６年",
    "Gitのinstall手順",
    "狩猟免許を取得した。捕獲報告アプリを作る。",
]
HIT_DOC = "狩猟免許を取得した。捕獲報告アプリを作る。"
DISTRACTORS = [
    "ＬｏＲａモジュールでGitのinstall手順を書いた。",
    "ガスの検針に行く。",
    "Running tests quickly",
    "令和６年度の東京都庁の機械学習モデルと形態素解析器",
]
HIT_QUERIES = [
    "狩猟",
    "免許",
    "捕獲",
    "報告",
    "アプリ",
    "捕獲報告アプリ",
    "狩猟免許",
    "LoRa",
    "lora",
    "ｌｏｒａ",
    "install",
    "インストール",
    "git",
    "ガス",
    "カス",
    "作った",
    "取得する",
    "run",
    "test",
    "令和6年",
    "2024年",
    "東京",
    "都庁",
    "機械学習",
    "形態素",
    "解析",
]


def cmd_segment():
    lines = []
    names = [
        "sudachi-A",
        "sudachi-B",
        "sudachi-C",
        "sudachi-A+C",
        "fugashi-unidiclite",
        "lindera-ipadic",
        "janome",
    ]
    ans = {n: ANALYZERS[n]() for n in names}
    lines.append(
        "## Segmentation (input NFKC-normalized; tokens separated by spaces; POS filter 'func' applied)\n"
    )
    lines.append("| input | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for s in SEG_SAMPLES:
        row = [s]
        for n in names:
            a = ans[n].analyze(prep(s, True))
            row.append(" ".join(to_terms(a, "surface", make_filter("func", ans[n].family))))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("\n## Without NFKC (raw input)\n")
    lines.append("| input | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for s in ["ＬｏＲａモジュール", "令和６年", "ｶﾀｶﾅのﾃｽﾄ"]:
        row = [s]
        for n in names:
            a = ans[n].analyze(s)
            row.append(" ".join(to_terms(a, "surface", make_filter("func", ans[n].family))))
        lines.append("| " + " | ".join(row) + " |")
    lines.append(
        "\n## normalized form (Sudachi normalized_form / UniDic lemma / IPADIC base form), func filter\n"
    )
    for n in ["sudachi-A", "sudachi-A+C", "fugashi-unidiclite", "lindera-ipadic"]:
        for s in SEG_SAMPLES:
            a = ans[n].analyze(prep(s, True))
            lines.append(
                f"- {n}: {s} -> "
                + " ".join(to_terms(a, "norm", make_filter("func", ans[n].family)))
            )
    # FTS5 hit checks
    cols = [(n, "surface") for n in names] + [
        ("sudachi-A", "norm"),
        ("sudachi-A", "hybrid"),
        ("sudachi-A+C", "hybrid"),
        ("fugashi-unidiclite", "norm"),
    ]
    labels = [n if f == "surface" else n + " " + f for n, f in cols]
    for nfkc in (True, False):
        lines.append(
            f"\n## FTS5 hit check (NFKC={'on' if nfkc else 'off'} for docs and queries): "
            + ", ".join(f"d{i} = 「{t}」" for i, t in enumerate([HIT_DOC] + DISTRACTORS))
            + "; cell = matching docs\n"
        )
        lines.append("| query | " + " | ".join(labels) + " |")
        lines.append("|---|" + "---|" * len(cols))
        cons = {}
        for n, f in cols:
            flt = make_filter("func", ans[n].family)
            cons[(n, f)] = build_index(
                [to_terms(ans[n].analyze(prep(t, nfkc)), f, flt) for t in [HIT_DOC] + DISTRACTORS]
            )
        for q in HIT_QUERIES:
            row = [q]
            for n, f in cols:
                flt = make_filter("func", ans[n].family)
                terms = to_terms(ans[n].analyze(prep(q, nfkc)), f, flt)
                hits = search(cons[(n, f)], terms)
                row.append(",".join(f"d{i}" for i in sorted(r for r, _ in hits)) or "-")
            lines.append("| " + " | ".join(row) + " |")
    # does unicode61 remove_diacritics fold kana voicing? (raw FTS5, no Python tokenizer)
    con = sqlite3.connect(":memory:")
    con.execute(
        "CREATE VIRTUAL TABLE d USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')"
    )
    con.executemany(
        "INSERT INTO d(rowid, body) VALUES (?,?)",
        [
            (1, "ガス"),
            (2, "カス"),
            (3, "ＬｏＲａ"),
            (4, "lora"),
            (5, "café"),
            (6, "パン"),
            (7, "ﾊﾟﾝ"),
        ],
    )
    lines.append(
        "\n## Raw FTS5 unicode61 behaviour (docs: 1 ガス, 2 カス, 3 ＬｏＲａ, 4 lora, 5 café, 6 パン, 7 ﾊﾟﾝ)\n"
    )
    for q in ["カス", "ガス", "lora", "ＬｏＲａ", "cafe", "パン", "ハン"]:
        r = [
            x[0]
            for x in con.execute(
                "SELECT rowid FROM d WHERE d MATCH ? ORDER BY rowid", (fts_quote(q),)
            )
        ]
        lines.append(f"- MATCH {fts_quote(q)} -> rows {r}")
    txt = "\n".join(lines)
    print(txt)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "segment.md").write_text(txt + "\n")


# --------------------------------------------------------------------------------------
# Threads / fork
# --------------------------------------------------------------------------------------
def cmd_threads():
    import threading

    corpus = load_jsonl(DATA / "jaquad/corpus.jsonl")[:400]
    texts = [prep(d["title"] + " " + d["text"], True) for d in corpus]
    out = {}
    for name in ["sudachi-A", "fugashi-unidiclite", "lindera-ipadic", "janome"]:
        res = {}
        an = ANALYZERS[name]()
        serial = [an.analyze(t) for t in texts]
        t0 = time.perf_counter()
        [an.analyze(t) for t in texts]
        one = time.perf_counter() - t0
        res["serial_sec(400 docs)"] = round(one, 3)
        # (1) one shared object, 2 threads
        errs, mism = [], [0]

        def work(obj, part):
            for i in part:
                try:
                    if obj.analyze(texts[i]) != serial[i]:
                        mism[0] += 1
                except Exception as e:  # noqa
                    errs.append(type(e).__name__ + ": " + str(e)[:80])

        parts = [range(0, len(texts), 2), range(1, len(texts), 2)]
        th = [threading.Thread(target=work, args=(an, p)) for p in parts]
        t0 = time.perf_counter()
        [x.start() for x in th]
        [x.join() for x in th]
        res["shared_2threads_sec"] = round(time.perf_counter() - t0, 3)
        res["shared_2threads_errors"] = len(errs)
        res["shared_2threads_first_error"] = errs[0] if errs else None
        res["shared_2threads_mismatches"] = mism[0]
        # (2) one object per thread
        errs.clear()
        mism[0] = 0
        if name.startswith("sudachi"):
            from sudachipy import SplitMode

            objs = []
            for _ in range(
                2
            ):  # share the Dictionary, one Tokenizer per thread (documented pattern)
                o = Sudachi.__new__(Sudachi)
                o.__dict__.update(an.__dict__)
                o.tok = an.dic.tokenizer(mode=SplitMode.A)
                objs.append(o)
        else:
            objs = [ANALYZERS[name]() for _ in range(2)]
        th = [threading.Thread(target=work, args=(o, p)) for o, p in zip(objs, parts)]
        t0 = time.perf_counter()
        [x.start() for x in th]
        [x.join() for x in th]
        res["per_thread_2threads_sec"] = round(time.perf_counter() - t0, 3)
        res["per_thread_errors"] = len(errs)
        res["per_thread_mismatches"] = mism[0]
        # (3) fork after construction: child reuses the parent's object
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                ok = all(an.analyze(texts[i]) == serial[i] for i in range(0, 50))
                msg = "ok" if ok else "mismatch"
            except Exception as e:  # noqa
                msg = "error " + type(e).__name__
            os.write(w, msg.encode())
            os._exit(0)
        os.close(w)
        msg = os.read(r, 200).decode()
        os.waitpid(pid, 0)
        res["fork_child_reuse"] = msg
        # (4) reuse: same object 1000 calls gives stable output
        res["reuse_stable"] = all(an.analyze(texts[i % 50]) == serial[i % 50] for i in range(1000))
        out[name] = res
        print(name, res, flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "threads.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))


# --------------------------------------------------------------------------------------
# User dictionaries: one entry, くくり罠 (a snare trap), which every tokenizer splits into くくり|罠
# --------------------------------------------------------------------------------------
UD_DIR = HERE / "userdict"
UD_TEXT = "くくり罠で鹿を捕獲した。"


def cmd_userdict():
    UD_DIR.mkdir(exist_ok=True)
    rep = {}
    # --- Sudachi: CSV (18 columns) compiled with `sudachipy ubuild` against the exact system.dic
    try:
        import sudachidict_core
        from sudachipy import Config, Dictionary, SplitMode

        sysdic = Path(sudachidict_core.__file__).parent / "resources" / "system.dic"
        base = Dictionary(dict="core").tokenizer(mode=SplitMode.A)
        # A-unit split info: inline word references "surface,pos1..pos6,reading" joined by '/'
        # (numeric word_id() references were rejected by 0.7.0 ubuild: "Split reference ... was incorrect")
        refs = "/".join(
            ",".join([m.surface(), *m.part_of_speech(), m.reading_form()])
            for m in base.tokenize("くくり罠")
        )
        import csv as _csv
        import io

        buf = io.StringIO()
        # cols: surface,left,right,cost,display,pos1..pos6,reading,normalized,dicform-id,split-type,A-split,B-split,unused
        _csv.writer(buf, lineterminator="\n").writerow(
            [
                "くくり罠",
                5146,
                5146,
                5000,
                "くくり罠",
                "名詞",
                "普通名詞",
                "一般",
                "*",
                "*",
                "*",
                "ククリワナ",
                "くくり罠",
                "*",
                "C",
                refs,
                "*",
                "*",
            ]
        )
        csv = buf.getvalue()
        (UD_DIR / "sudachi_user.csv").write_text(csv, encoding="utf-8")
        t0 = time.perf_counter()
        (UD_DIR / "sudachi_user.dic").unlink(missing_ok=True)  # ubuild refuses to overwrite
        p = subprocess.run(
            [
                str(Path(sys.executable).parent / "sudachipy"),
                "ubuild",
                "-s",
                str(sysdic),
                "-o",
                str(UD_DIR / "sudachi_user.dic"),
                str(UD_DIR / "sudachi_user.csv"),
            ],
            capture_output=True,
            text=True,
        )
        build_s = time.perf_counter() - t0
        r = {
            "csv": csv.strip(),
            "ubuild_rc": p.returncode,
            "ubuild_sec": round(build_s, 2),
            "ubuild_out": (p.stdout + p.stderr).strip()[-300:],
        }
        d = Dictionary(dict="core", config=Config(user=[str(UD_DIR / "sudachi_user.dic")]))
        for mode in ("A", "C"):
            t = d.tokenizer(mode=getattr(SplitMode, mode))
            r[f"mode {mode}"] = " | ".join(m.surface() for m in t.tokenize(UD_TEXT))
        tc = d.tokenizer(mode=SplitMode.C)
        m = [m for m in tc.tokenize(UD_TEXT)][0]
        r["C-unit split(A)"] = [x.surface() for x in m.split(SplitMode.A)]
        r["dictionary_id of token (0=system, 1=user)"] = m.dictionary_id()
        r["pos"] = m.part_of_speech()
        rep["sudachi"] = r
    except Exception as e:  # noqa
        rep["sudachi"] = {"error": repr(e)}
    # --- fugashi + unidic-lite: MeCab CSV compiled with fugashi.build_dictionary (mecab-dict-index)
    try:
        import fugashi
        import unidic_lite

        dicdir = unidic_lite.DICDIR
        # unidic-lite features: pos1..4,cType,cForm,lForm,lemma,orth,pron,orthBase,pronBase,goshu,iType,iForm,
        # fType,fForm,kana,kanaBase,form,formBase,iConType,fConType,aType,aConType,aModeType (26)
        feats = [
            "名詞",
            "普通名詞",
            "一般",
            "*",
            "*",
            "*",
            "ククリワナ",
            "くくり罠",
            "くくり罠",
            "ククリワナ",
            "くくり罠",
            "ククリワナ",
            "混",
            "*",
            "*",
            "*",
            "*",
            "ククリワナ",
            "ククリワナ",
            "ククリワナ",
            "ククリワナ",
            "*",
            "*",
            "0",
            "C2",
            "*",
        ]
        csv = "くくり罠,5139,5139,3000," + ",".join(feats) + "\n"
        (UD_DIR / "mecab_user.csv").write_text(csv, encoding="utf-8")
        t0 = time.perf_counter()
        fugashi.build_dictionary(
            f"mecab-dict-index -d {dicdir} -u {UD_DIR / 'mecab_user.dic'} -f utf-8 -t utf-8 {UD_DIR / 'mecab_user.csv'}"
        )
        r = {
            "csv": csv.strip(),
            "build_sec": round(time.perf_counter() - t0, 2),
            "built": (UD_DIR / "mecab_user.dic").exists(),
        }
        tg = fugashi.Tagger(f"-u {UD_DIR / 'mecab_user.dic'}")
        r["tokens"] = " | ".join(w.surface for w in tg(UD_TEXT))
        w0 = next(iter(tg(UD_TEXT)))
        r["feature"] = (w0.feature.pos1, w0.feature.lemma)
        rep["fugashi-unidiclite"] = r
    except Exception as e:  # noqa
        rep["fugashi-unidiclite"] = {"error": repr(e)}
    # --- lindera-python-ipadic: simple 3-column CSV loaded at runtime (no compile step)
    try:
        import lindera

        csv = "くくり罠,カスタム名詞,ククリワナ\n"
        (UD_DIR / "lindera_user.csv").write_text(csv, encoding="utf-8")
        t0 = time.perf_counter()
        tk = (
            lindera.TokenizerBuilder()
            .set_mode("normal")
            .set_dictionary("embedded://ipadic")
            .set_user_dictionary(str(UD_DIR / "lindera_user.csv"))
            .build()
        )
        r = {"csv": csv.strip(), "load_sec": round(time.perf_counter() - t0, 2)}
        toks = tk.tokenize(UD_TEXT)
        r["tokens"] = " | ".join(t.surface for t in toks)
        r["details0"] = list(toks[0].details)
        rep["lindera-ipadic"] = r
    except Exception as e:  # noqa
        rep["lindera-ipadic"] = {"error": repr(e)}
    # --- janome: simple CSV (surface,pos,reading) compiled in memory at Tokenizer() time
    try:
        from janome.tokenizer import Tokenizer

        csv = "くくり罠,カスタム名詞,ククリワナ\n"
        (UD_DIR / "janome_user.csv").write_text(csv, encoding="utf-8")
        t0 = time.perf_counter()
        tk = Tokenizer(str(UD_DIR / "janome_user.csv"), udic_type="simpledic", udic_enc="utf8")
        r = {"csv": csv.strip(), "load_sec": round(time.perf_counter() - t0, 2)}
        toks = list(tk.tokenize(UD_TEXT))
        r["tokens"] = " | ".join(t.surface for t in toks)
        r["pos0"] = toks[0].part_of_speech
        rep["janome"] = r
    except Exception as e:  # noqa
        rep["janome"] = {"error": repr(e)}
    txt = json.dumps(rep, ensure_ascii=False, indent=1)
    print(txt)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "userdict.json").write_text(txt)


if __name__ == "__main__":
    cmd, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("help", [])
    if cmd == "startup":
        cmd_startup(args[0])
    elif cmd == "startup-all":
        cmd_startup_all(int(args[1]) if args[:1] == ["-n"] else 5)
    elif cmd == "sizes":
        cmd_sizes()
    elif cmd == "quality":
        cmd_quality(args)
    elif cmd == "segment":
        cmd_segment()
    elif cmd == "speed":
        cmd_speed(args or None)
    elif cmd == "report":
        cmd_report()
    elif cmd == "compare":
        cmd_compare(args[0] if args else "jaquad", args[1:] or None)
    elif cmd == "userdict":
        cmd_userdict()
    elif cmd == "threads":
        cmd_threads()
    elif cmd == "list":
        print("\n".join(VARIANTS))
    else:
        print(__doc__)
