"""Keyword search on SQLite (FTS5) and on PostgreSQL (store/pg_keywords.py), same data, same run:
write throughput of the keyword index, search latency (p50/p95), and whether the two rank
alike (identical top-100 ids, scores within 1e-6, nDCG@10 of the keyword ranking).

    python bench/pg_keywords.py scifact jaquad
    python bench/pg_keywords.py scifact --copies 10          # ~100k chunks
    python bench/pg_keywords.py jaquad --url postgresql://...  # your own server

Documents are chunked and tokenized by tsm's own pipeline (text/chunk.py, the Sudachi
tokenizer) before the clock starts; the clock then covers the store's write_document, one
document per transaction as `tsm index` writes them, and separately the keyword rows alone
(keywords.insert). Searches are the engine's keyword calls: search/fts.py's fts_hits (the
best chunk of each of 100 documents, and the number of matching documents) and one
document_frequency per query term (search/coverage.py's IDF). Without --url a server is
started by scripts/postgres in a temp dir (fsync on) and stopped after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tsm.models import Document, Section  # noqa: E402
from tsm.search.fts import fts_hits, match_expression  # noqa: E402
from tsm.store import documents, filters, keywords, migrations  # noqa: E402
from tsm.store.connect import Transaction, open_db  # noqa: E402
from tsm.store.postgres import connection as postgres  # noqa: E402
from tsm.text.chunk import chunk_sections  # noqa: E402
from tsm.text.tokenizer import get_tokenizer  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "bench" / "results"
DEPTH = 100  # documents per keyword search (the engine's search.candidates default is 100)


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def prepare(corpus: list[dict], copies: int) -> list[tuple[Document, list, str]]:
    """(document, chunk rows, tags) as indexing.write makes them, `copies` times each."""
    tokenizer = get_tokenizer()
    prepared = []
    for doc in corpus:
        title = " ".join(doc.get("title", "").split())
        sections = (Section("", doc["text"]),)
        chunks = chunk_sections(sections, 1000)
        title_terms = tokenizer.index_text(title)
        rows = [
            documents.ChunkRow(
                chunk=c,
                fts_title=title_terms,
                fts_section="",
                fts_body=tokenizer.index_text(c.text),
                embed_hash=f"{doc['_id']}-{c.index}",
            )
            for c in chunks
        ]
        for copy in range(copies):
            path = f"{copy}/{doc['_id']}.md"
            prepared.append(
                (
                    Document(
                        path=path, type="markdown", title=title, text=doc["text"], sections=sections
                    ),
                    rows,
                    "",
                )
            )
    return prepared


def write_all(conn: Any, prepared: list[tuple[Document, list, str]]) -> tuple[float, float]:
    """Seconds for every write_document, and of those the seconds in keywords.insert."""
    in_keywords = 0.0
    insert = keywords.insert

    def timed_insert(c: Any, rows: Any) -> None:
        nonlocal in_keywords
        started = time.perf_counter()
        insert(c, rows)
        in_keywords += time.perf_counter() - started

    documents.keywords.insert = timed_insert  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        for doc, rows, tags in prepared:
            with Transaction(conn):
                documents.write_document(
                    conn,
                    doc,
                    rows,
                    content_hash=doc.path,
                    size=len(doc.text),
                    mtime=0.0,
                    category="note",
                    fts_tags=tags,
                )
        return time.perf_counter() - started, in_keywords
    finally:
        documents.keywords.insert = insert  # type: ignore[method-assign]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def search_all(conn: Any, queries: list[tuple[str, list[str], str]]) -> dict[str, Any]:
    hits_ms, df_ms, dfb_ms, results = [], [], [], {}
    for qid, terms, expression in queries:
        ms, found = timed(lambda e=expression: fts_hits(conn, e, filters.EVERYTHING, [], DEPTH))
        hits_ms.append(ms)
        results[qid] = found
        ms, _ = timed(
            lambda ts=terms: [keywords.document_frequency(conn, match_expression([t])) for t in ts]
        )
        df_ms.append(ms)
        ms, _ = timed(
            lambda ts=terms: keywords.document_frequencies(
                conn, [match_expression([t]) for t in ts]
            )
        )
        dfb_ms.append(ms)
    return {"hits_ms": hits_ms, "df_ms": df_ms, "dfb_ms": dfb_ms, "results": results}


def same(a: tuple[list, int], b: tuple[list, int]) -> bool:
    (ra, ta), (rb, tb) = a, b
    return (
        ta == tb
        and [(c, d) for c, d, _ in ra] == [(c, d) for c, d, _ in rb]
        and all(abs(x - y) <= 1e-6 for (_, _, x), (_, _, y) in zip(ra, rb, strict=True))
    )


def ndcg10(conn: Any, results: dict, qrels: dict[str, dict[str, int]], copies: int) -> float:
    from ranx import Qrels, Run, evaluate

    paths = dict(conn.execute("SELECT id, path FROM documents").fetchall())
    run = {
        qid: {
            paths[d].split("/", 1)[1][: -len(".md")]: float(s)
            for _, d, s in found
            if paths[d].startswith("0/")
        }
        or {"-": 0.0}
        for qid, (found, _) in results.items()
    }
    return float(evaluate(Qrels(qrels), Run(run), "ndcg@10"))


def start_server(directory: Path) -> str:
    script = ROOT / "scripts" / "postgres"
    out = subprocess.run(
        [str(script), "start", str(directory)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def run_dataset(name: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    folder = DATASETS / name
    corpus = read_jsonl(folder / "corpus.jsonl")[: args.max_docs]
    queries = read_jsonl(folder / "queries.jsonl")
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    queries = [q for q in queries if q["_id"] in qrels][: args.max_queries]
    qrels = {q["_id"]: qrels[q["_id"]] for q in queries}
    tokenizer = get_tokenizer()
    started = time.perf_counter()
    prepared = prepare(corpus, args.copies)
    prepare_s = time.perf_counter() - started
    chunk_count = sum(len(rows) for _, rows, _ in prepared)
    planned = []
    for q in queries:
        terms = tokenizer.query_terms(q["text"])
        expression = match_expression(terms)
        if expression:
            planned.append((q["_id"], terms, expression))

    out: dict[str, Any] = {
        "documents": len(prepared),
        "chunks": chunk_count,
        "queries": len(planned),
        "prepare_s": round(prepare_s, 2),
    }
    with tempfile.TemporaryDirectory() as tmp:
        lite = open_db(Path(tmp) / "tsm.db", create=True)
        server = postgres.connect(fresh_database(url, f"bench_kw_{name.replace('-', '_')}"))
        migrations.apply(server)
        for label, conn in (("sqlite", lite), ("postgres", server)):
            load = os.getloadavg()[0]
            total_s, keyword_s = write_all(conn, prepared)
            if label == "postgres":
                # What autovacuum does after a bulk write: statistics, and the visibility map
                # that lets the postings be read by index-only scans.
                conn.execute("VACUUM ANALYZE chunk_keywords")
                conn.execute("VACUUM ANALYZE keyword_postings")
            conn.execute("SELECT 1")
            for _, _, expression in planned[:20]:  # warm caches and plans
                fts_hits(conn, expression, filters.EVERYTHING, [], DEPTH)
            searched = search_all(conn, planned)
            out[label] = {
                "load_before_write": round(load, 2),
                "write_s": round(total_s, 2),
                "documents_per_s": round(len(prepared) / total_s, 1),
                "keyword_insert_s": round(keyword_s, 2),
                "keyword_chunks_per_s": round(chunk_count / keyword_s, 1),
                "hits_p50_ms": round(statistics.median(searched["hits_ms"]), 2),
                "hits_p95_ms": round(pct(searched["hits_ms"], 0.95), 2),
                "df_p50_ms": round(statistics.median(searched["df_ms"]), 2),
                "df_p95_ms": round(pct(searched["df_ms"], 0.95), 2),
                "dfb_p50_ms": round(statistics.median(searched["dfb_ms"]), 2),
                "dfb_p95_ms": round(pct(searched["dfb_ms"], 0.95), 2),
                "ndcg@10": round(ndcg10(conn, searched["results"], qrels, args.copies), 4),
                "load_after_search": round(os.getloadavg()[0], 2),
                "_results": searched["results"],
            }
        identical = sum(
            same(out["sqlite"]["_results"][qid], out["postgres"]["_results"][qid])
            for qid, _, _ in planned
        )
        out["identical_rankings"] = identical
        size = server.execute(
            """SELECT pg_total_relation_size('chunk_keywords')
                      + coalesce(pg_total_relation_size(to_regclass('keyword_postings')), 0),
                      pg_indexes_size('chunk_keywords')
                      + coalesce(pg_indexes_size(to_regclass('keyword_postings')), 0)"""
        ).fetchone()
        out["pg_keyword_table_mb"] = round(size[0] / 2**20, 1)
        out["pg_keyword_gin_mb"] = round(size[1] / 2**20, 1)
        for label in ("sqlite", "postgres"):
            del out[label]["_results"]
        lite.close()
        server.close()
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Keyword search: SQLite FTS5 vs PostgreSQL (store/pg_keywords.py)",
        "",
        f"`{report['command']}` on {report['date']}, {report['machine']}; "
        f"{report['postgres']}. Load average (1 min) before each store's writes and after "
        "its searches is in the table: the machine is shared.",
        "",
        "Writes: one document per transaction through store/documents.write_document; "
        "`kw chunks/s` counts only the time in keywords.insert. Searches: search/fts.py "
        f"fts_hits (best chunk of {DEPTH} documents + the matching-document count), and a "
        "document_frequency per query term (`df`), and all of a query's terms in one "
        "document_frequencies call (`df batch`, what search/coverage.py asks). "
        "`identical` = queries whose top-100 ids, order and count agree and whose scores "
        "are within 1e-6.",
        "",
        "| dataset | docs | chunks | store | docs/s | kw chunks/s | fts_hits p50 / p95 ms "
        "| df p50 / p95 ms | df batch p50 / p95 ms | nDCG@10 (keywords) | load | identical |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, r in report["datasets"].items():
        for label in ("sqlite", "postgres"):
            s = r[label]
            lines.append(
                f"| {name} | {r['documents']} | {r['chunks']} | {label} | "
                f"{s['documents_per_s']} | {s['keyword_chunks_per_s']} | "
                f"{s['hits_p50_ms']} / {s['hits_p95_ms']} | {s['df_p50_ms']} / {s['df_p95_ms']} "
                f"| {s['dfb_p50_ms']} / {s['dfb_p95_ms']} | {s['ndcg@10']} | "
                f"{s['load_before_write']} → {s['load_after_search']} | "
                f"{r['identical_rankings']}/{r['queries']} |"
            )
    lines.append("")
    for name, r in report["datasets"].items():
        lines.append(
            f"- {name}: PostgreSQL keyword table {r['pg_keyword_table_mb']} MB "
            f"(chunk_keywords and keyword_postings; of which indexes "
            f"{r['pg_keyword_gin_mb']} MB); tokenizing and "
            f"chunking before the clock {r['prepare_s']} s."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url", help="a PostgreSQL server (default: start one)")
    parser.add_argument("--copies", type=int, default=1, help="index each document N times")
    parser.add_argument("--max-docs", type=int)
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--out", default="pg-keywords", help="bench/results/<out>.md/.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tsm-bench-pg-") as tmp:
        url = args.url or start_server(Path(tmp))
        try:
            report: dict[str, Any] = {
                "command": "python bench/pg_keywords.py " + " ".join(sys.argv[1:]),
                "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                "datasets": {},
            }
            import psycopg

            with psycopg.connect(url) as c:
                report["postgres"] = c.execute("SHOW server_version").fetchone()[0]
                report["postgres"] = "PostgreSQL " + report["postgres"]
            for name in args.datasets:
                report["datasets"][name] = run_dataset(name, url, args)
                print(name, json.dumps(report["datasets"][name], indent=1), flush=True)
        finally:
            if not args.url:
                subprocess.run([str(ROOT / "scripts" / "postgres"), "stop", tmp], check=False)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
