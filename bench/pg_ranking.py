"""The PostgreSQL keyword ranking statement before and after the index rebuild (migration m007),
same data, same server, same run: p50/p95 of `best_chunks` alternated query by query, whether
the two rank alike (and alike SQLite's FTS5), and EXPLAIN (ANALYZE, BUFFERS) of one query's
ranking statement in each form, with its planning time (the new one also as the generic plan
a prepared statement gets).

    # a store of schema 6 per dataset, written by the tsm of before (bench/pg_keywords.py of
    # commit 02ef1b4 leaves its databases bench_kw_<dataset> on the server):
    git worktree add ../base 02ef1b4
    (cd ../base && python bench/pg_keywords.py scifact jaquad --url URL)
    python bench/pg_ranking.py --url URL --before-src ../base/src scifact jaquad

Each dataset's database is copied (CREATE DATABASE ... TEMPLATE), the copy migrated by this
tsm (the migration is timed), both VACUUM ANALYZEd; `best_chunks` then runs with the search
engine's arguments (search/fts.py: column weights, 300 chunks for 100 documents) on the old
database through the old module and on the copy through this one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tsm.search.fts import COLUMN_WEIGHTS, match_expression  # noqa: E402
from tsm.store import migrations  # noqa: E402
from tsm.store.postgres import connection as postgres  # noqa: E402
from tsm.store.postgres import keywords as pg_keywords  # noqa: E402
from tsm.text.tokenizer import get_tokenizer  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "bench" / "results"
FETCH = 300  # search/fts.py asks 3 x 100 chunks for 100 documents


def load() -> float:
    return os.getloadavg()[0]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def old_module(src: Path) -> Any:
    path = src / "tsm" / "store" / "pg_keywords.py"
    spec = importlib.util.spec_from_file_location("pg_keywords_before", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Recorder:
    """The store connection, remembering its last statement (to EXPLAIN it)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.last: tuple[str, Any] = ("", ())

    def execute(self, sql: str, params: Any = None) -> Any:
        self.last = (sql, params)
        return self.conn.execute(sql, params)


def queries(name: str, limit: int | None) -> list[str]:
    folder = DATASETS / name
    wanted = set()
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        next(fh)
        wanted = {line.split("\t")[0] for line in fh if line.strip()}
    tokenizer = get_tokenizer()
    out = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            expression = match_expression(tokenizer.query_terms(q["text"]))
            if q["_id"] in wanted and expression:
                out.append(expression)
    return out[:limit]


def numbered(sql: str) -> str:
    """`?` placeholders as $1, $2 … (for PREPARE)."""
    parts = sql.split("?")
    return "".join(p + (f"${i}" if i < len(parts) else "") for i, p in enumerate(parts, 1))


def explain(conn: Any, sql: str, params: Any, generic: bool = False) -> str:
    import psycopg

    raw = conn.raw
    cursor = psycopg.ClientCursor(raw)
    if not generic:
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + postgres._translate(sql), postgres._storable(params)
        )
        return "\n".join(r[0] for r in cursor.fetchall())
    raw.execute("DEALLOCATE ALL")
    raw.execute(f"PREPARE ranking AS {numbered(sql)}")
    raw.execute("SET plan_cache_mode = force_generic_plan")
    marks = ", ".join(["%s"] * len(params))
    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE ranking({marks})", list(params))
    plan = "\n".join(r[0] for r in cursor.fetchall())
    raw.execute("RESET plan_cache_mode")
    raw.execute("DEALLOCATE ranking")
    return plan


def run_dataset(name: str, url: str, old: Any, args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    before_db, after_db = f"bench_kw_{name.replace('-', '_')}", f"bench_kw_{name}_m007"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{after_db}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{after_db}" TEMPLATE "{before_db}"')
    before = postgres.connect(database(url, before_db))
    after = postgres.connect(database(url, after_db))
    assert migrations.schema_version(before) == 6, "the 'before' store must be of schema 6"
    started = time.perf_counter()
    migrations.apply(after)
    migrate_s = time.perf_counter() - started
    for conn in (before, after):
        conn.execute("VACUUM ANALYZE")
    chunks = after.execute("SELECT count(*) FROM chunks").fetchone()[0]
    expressions = queries(name, args.max_queries)
    for e in expressions[:20]:  # warm caches, and psycopg's prepared statements
        old.best_chunks(before, e, COLUMN_WEIGHTS, FETCH)
        pg_keywords.best_chunks(after, e, COLUMN_WEIGHTS, FETCH)
    times: dict[str, list[float]] = {"before": [], "after": []}
    identical = 0
    loads = [load()]
    for e in expressions:
        t0 = time.perf_counter()
        got_before = old.best_chunks(before, e, COLUMN_WEIGHTS, FETCH)
        t1 = time.perf_counter()
        got_after = pg_keywords.best_chunks(after, e, COLUMN_WEIGHTS, FETCH)
        t2 = time.perf_counter()
        times["before"].append((t1 - t0) * 1000)
        times["after"].append((t2 - t1) * 1000)
        identical += [r[:2] for r in got_before] == [r[:2] for r in got_after] and all(
            abs(a[2] - b[2]) <= 1e-9 * max(1.0, abs(a[2]))
            for a, b in zip(got_before, got_after, strict=True)
        )
    loads.append(load())
    # The query at the old statement's median, EXPLAINed in both forms.
    middle = sorted(range(len(expressions)), key=lambda i: times["before"][i])[
        len(expressions) // 2
    ]
    e = expressions[middle]
    rec_before, rec_after = Recorder(before), Recorder(after)
    old.best_chunks(rec_before, e, COLUMN_WEIGHTS, FETCH)
    pg_keywords.best_chunks(rec_after, e, COLUMN_WEIGHTS, FETCH)
    sizes = after.execute(
        """SELECT pg_total_relation_size('chunk_keywords')
                  + pg_total_relation_size('keyword_postings')"""
    ).fetchone()[0]
    sizes_before = before.execute(
        """SELECT pg_total_relation_size('chunk_keywords')
                  + pg_total_relation_size('keyword_postings')"""
    ).fetchone()[0]
    out = {
        "chunks": chunks,
        "queries": len(expressions),
        "migrate_s": round(migrate_s, 2),
        "load": [round(x, 2) for x in loads],
        "identical": identical,
        "keyword_tables_mb": {
            "before": round(sizes_before / 2**20, 1),
            "after": round(sizes / 2**20, 1),
        },
        "explained": e,
        "explain_before": explain(before, *rec_before.last),
        "explain_after": explain(after, *rec_after.last),
        "explain_after_generic": explain(after, *rec_after.last, generic=True),
    }
    for label, values in times.items():
        out[label] = {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(pct(values, 0.95), 2),
        }
    out["ratio_p50"] = round(out["after"]["p50_ms"] / out["before"]["p50_ms"], 3)
    before.close()
    after.close()
    return out


def planning(plan: str) -> str:
    for line in plan.splitlines():
        if line.startswith("Planning Time"):
            return line.split(":", 1)[1].strip()
    return "?"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# The PostgreSQL keyword ranking statement, before and after m007",
        "",
        f"`{report['command']}` on {report['date']}, {report['machine']}. Load average "
        "(1 min) before and after each dataset's timed loop beside its figures: the machine "
        "is shared. `best_chunks` with the engine's arguments, before and after alternated "
        "query by query; `identical`: same ids in the same order, ranks within 1e-9.",
        "",
        "| dataset | chunks | queries | before p50 / p95 ms | after p50 / p95 ms "
        "| after/before p50 | identical | keyword tables MB before → after | m007 s | load |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for name, r in report["datasets"].items():
        lines.append(
            f"| {name} | {r['chunks']} | {r['queries']} | {r['before']['p50_ms']} / "
            f"{r['before']['p95_ms']} | {r['after']['p50_ms']} / {r['after']['p95_ms']} | "
            f"{r['ratio_p50']} | {r['identical']}/{r['queries']} | "
            f"{r['keyword_tables_mb']['before']} → {r['keyword_tables_mb']['after']} | "
            f"{r['migrate_s']} | {r['load'][0]} → {r['load'][1]} |"
        )
    for name, r in report["datasets"].items():
        lines += [
            "",
            f"## {name}: `{r['explained']}`",
            "",
            f"Planning: before {planning(r['explain_before'])}, after "
            f"{planning(r['explain_after'])} (custom plan), "
            f"{planning(r['explain_after_generic'])} (generic plan, as a prepared "
            "statement may get).",
            "",
            "Before:",
            "",
            "```",
            r["explain_before"],
            "```",
            "",
            "After (custom plan):",
            "",
            "```",
            r["explain_after"],
            "```",
            "",
            "After (generic plan: PREPARE, plan_cache_mode = force_generic_plan):",
            "",
            "```",
            r["explain_after_generic"],
            "```",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url", required=True, help="the server holding bench_kw_<dataset>")
    parser.add_argument("--before-src", required=True, type=Path, help="02ef1b4's src/")
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--out", default="pg-ranking-m007")
    args = parser.parse_args()
    import platform

    old = old_module(args.before_src)
    report: dict[str, Any] = {
        "command": "python bench/pg_ranking.py " + " ".join(sys.argv[1:]),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "datasets": {},
    }
    for name in args.datasets:
        report["datasets"][name] = run_dataset(name, args.url, old, args)
        r = report["datasets"][name]
        print(name, {k: v for k, v in r.items() if not k.startswith("explain")}, flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
