"""The PostgreSQL keyword ranking statement before and after the index rebuild (migration m007),
same data, same server, same run: p50/p95 of `best_chunks` alternated query by query, and of
the keyword read a search makes when it also counts its matches (before: `best_chunks` then
`matching_chunk_ids`; now `best_chunks_and_matches`, one statement), whether the two rank
alike, the planning time of every query's ranking statement (EXPLAIN (SUMMARY) of the custom
plan each would get), which plans the server gave the prepared ranking statement during the
timed loop (pg_prepared_statements: psycopg prepares a statement after 5 executions, and the
server then chooses between custom and generic plans), and EXPLAIN (ANALYZE, BUFFERS) of one
query's ranking statement in each form: as an unnamed statement, as the prepared statement
after five executions with the server's own choice of plan, and as its generic plan. Query by
query, what each asks of the index (its phrases, the postings they read, its matches) beside
its own ratio, the median of --repeat alternated runs: which queries miss the goal, and why.

    # a store per dataset, written by the tsm of before (bench/pg_keywords.py of f9192a3 or
    # 02ef1b4, whose store/pg_keywords.py are the same, leaves bench_kw_<dataset> on the
    # server; schema 5 or 6):
    git worktree add ../base f9192a3
    (cd ../base && python bench/pg_keywords.py scifact jaquad --url URL --out /tmp/before)
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
from collections.abc import Callable
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
GOAL = 0.35  # issue 29: the ranking statement at most 0.35x f9192a3's p50


def load() -> float:
    return os.getloadavg()[0]


def backend_cpu(conn: Any) -> Callable[[], float]:
    """The CPU seconds the connection's server process has used so far (its /proc entry:
    the server must run on this machine, readable by us; else NaN). Unlike wall time it
    holds no wait for a core, which on a loaded machine is most of a short statement's."""
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    tick = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / tick

    return used


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


def explain(conn: Any, sql: str, params: Any) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the statement as an unnamed one (a custom plan)."""
    import psycopg

    cursor = psycopg.ClientCursor(conn.raw)
    cursor.execute(
        "EXPLAIN (ANALYZE, BUFFERS) " + postgres._translate(sql), postgres._storable(params)
    )
    return "\n".join(r[0] for r in cursor.fetchall())


def explain_prepared(
    conn: Any, sql: str, params: Any, warm: list[Any], *, generic: bool
) -> tuple[str, dict[str, int]]:
    """EXPLAIN (ANALYZE, BUFFERS) of the statement prepared and first executed once with each
    of `warm`'s parameters, as psycopg's prepared statement would have been: the plan the
    server chooses then (generic or custom: it compares their costs after five custom plans),
    or with `generic` the generic plan forced. Also how many plans of each kind it made."""
    import psycopg

    raw = conn.raw
    cursor = psycopg.ClientCursor(raw)
    raw.execute("DEALLOCATE ALL")
    raw.execute(f"PREPARE ranking AS {numbered(sql)}")
    if generic:
        raw.execute("SET plan_cache_mode = force_generic_plan")
    marks = ", ".join(["%s"] * len(params))
    for values in warm:
        cursor.execute(f"EXECUTE ranking({marks})", list(values))
        cursor.fetchall()
    cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE ranking({marks})", list(params))
    plan = "\n".join(r[0] for r in cursor.fetchall())
    generic_plans, custom_plans = raw.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'ranking'"
    ).fetchone()
    raw.execute("RESET plan_cache_mode")
    raw.execute("DEALLOCATE ranking")
    return plan, {"generic_plans": generic_plans, "custom_plans": custom_plans}


def planning_ms(conn: Any, sql: str, params: Any) -> float:
    """The planning time of the custom plan the statement gets with these values."""
    import psycopg

    cursor = psycopg.ClientCursor(conn.raw)
    cursor.execute("EXPLAIN (SUMMARY) " + postgres._translate(sql), postgres._storable(params))
    return float(planning("\n".join(r[0] for r in cursor.fetchall())).split()[0])


def prepared_plans(conn: Any) -> list[dict[str, Any]]:
    """The connection's prepared keyword statements (psycopg's) and the plans each got."""
    rows = conn.raw.execute(
        """SELECT name, generic_plans, custom_plans, left(regexp_replace(statement, '\\s+', ' ',
                  'g'), 90)
           FROM pg_prepared_statements WHERE statement LIKE '%keyword_postings%'
           ORDER BY generic_plans + custom_plans DESC"""
    ).fetchall()
    return [
        {"name": n, "generic_plans": g, "custom_plans": c, "statement": t} for n, g, c, t in rows
    ]


def query_shapes(conn: Any, expressions: list[str]) -> list[dict[str, int]]:
    """What each query asks of the index: its phrases, those of several lexemes, the
    postings its one-lexeme phrases read (a repeated phrase reads its range again), and the
    chunks that match."""
    shapes = []
    for e in expressions:
        query = pg_keywords.Query.parse(e)
        singles = [p[0] for p in query.phrases if len(p) == 1]
        postings = conn.execute(
            """SELECT count(*) FROM unnest(?::text[]) AS q(l)
               JOIN keyword_postings p ON p.lexeme = q.l""",
            (singles,),
        ).fetchone()[0]
        shapes.append(
            {
                "phrases": len(query.phrases),
                "multi": sum(len(p) > 1 for p in query.phrases),
                "postings": int(postings),
                "matches": sum(1 for _ in pg_keywords.matching_chunk_ids(conn, e)),
            }
        )
    return shapes


def per_query_table(rows: list[dict[str, Any]], goal: float) -> list[str]:
    """The queries above `goal` (their own now/before ratio, the median of --repeat runs)
    and the median ratio by how many postings a query reads, with the server's CPU per
    query (the mean over the quarter: /proc counts in ticks of 10 ms)."""
    for r in rows:
        r["ratio"] = r["after_ms"] / r["before_ms"]
    above = [r for r in rows if r["ratio"] > goal]
    lines = [
        f"{len(above)} of {len(rows)} queries above {goal}× on their own (median of their "
        "runs). By the postings a query reads (quarters of the queries): the median ratio of "
        "wall times, and the server process's CPU per query in the timed loop (its mean):",
        "",
        "| postings | queries | median ratio | above | before p50 ms | now p50 ms | "
        "phrases p50 | matches p50 | server CPU before / now ms per query | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ordered = sorted(rows, key=lambda r: r["postings"])
    quarters = [ordered[k * len(ordered) // 4 : (k + 1) * len(ordered) // 4] for k in range(4)]
    for part in (q for q in quarters if q):
        cpu_before = statistics.fmean(r["before_cpu_ms"] for r in part)
        cpu_after = statistics.fmean(r["after_cpu_ms"] for r in part)
        lines.append(
            f"| {part[0]['postings']}-{part[-1]['postings']} | {len(part)} | "
            f"{statistics.median(r['ratio'] for r in part):.3f} | "
            f"{sum(r['ratio'] > goal for r in part)} | "
            f"{statistics.median(r['before_ms'] for r in part):.2f} | "
            f"{statistics.median(r['after_ms'] for r in part):.2f} | "
            f"{statistics.median(r['phrases'] for r in part):g} | "
            f"{statistics.median(r['matches'] for r in part):g} | "
            f"{cpu_before:.2f} / {cpu_after:.2f} | {cpu_after / cpu_before:.3f} |"
        )
    lines += [
        "",
        "The ten queries with the highest ratio:",
        "",
        "| query | phrases | of several lexemes | postings | matches | before ms | now ms | "
        "ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: -r["ratio"])[:10]:
        lines.append(
            f"| `{r['expression'][:80]}` | {r['phrases']} | {r['multi']} | {r['postings']} | "
            f"{r['matches']} | {r['before_ms']:.2f} | {r['after_ms']:.2f} | {r['ratio']:.3f} |"
        )
    return lines


def stats(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 2),
        "p95_ms": round(pct(values, 0.95), 2),
        "max_ms": round(max(values), 2),
    }


def same_ranking(a: list[Any], b: list[Any]) -> bool:
    """Same ids in the same order, ranks within 1e-9."""
    return [r[:2] for r in a] == [r[:2] for r in b] and all(
        abs(x[2] - y[2]) <= 1e-9 * max(1.0, abs(x[2])) for x, y in zip(a, b, strict=True)
    )


def run_dataset(name: str, url: str, old: Any, args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    before_db, after_db = f"bench_kw_{name.replace('-', '_')}", f"bench_kw_{name}_m007"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{after_db}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{after_db}" TEMPLATE "{before_db}"')
    before = postgres.connect(database(url, before_db))
    after = postgres.connect(database(url, after_db))
    schema = migrations.schema_version(before)
    assert schema in (5, 6), f"the 'before' store must be of schema 5 or 6, not {schema}"
    started = time.perf_counter()
    migrations.apply(after)
    migrate_s = time.perf_counter() - started
    for conn in (before, after):
        conn.execute("VACUUM ANALYZE")
    chunks = after.execute("SELECT count(*) FROM chunks").fetchone()[0]
    expressions = queries(name, args.max_queries)
    rec_before, rec_after = Recorder(before), Recorder(after)
    for e in expressions[:20]:  # warm caches, and psycopg's prepared statements
        old.best_chunks(rec_before, e, COLUMN_WEIGHTS, FETCH)
        pg_keywords.best_chunks(rec_after, e, COLUMN_WEIGHTS, FETCH)
        pg_keywords.best_chunks_and_matches(rec_after, e, COLUMN_WEIGHTS, FETCH)[1]()
    times: dict[str, list[float]] = {
        k: [] for k in ("before", "after", "counted_before", "counted_after")
    }
    identical = identical_counted = 0
    statements: dict[str, list[tuple[str, Any]]] = {"before": [], "after": []}

    def ranking(label: str, e: str, record: bool = True) -> tuple[float, Any]:
        t0 = time.perf_counter()
        if label == "before":
            got = old.best_chunks(rec_before, e, COLUMN_WEIGHTS, FETCH)
            last = rec_before.last
        else:
            got = pg_keywords.best_chunks(rec_after, e, COLUMN_WEIGHTS, FETCH)
            last = rec_after.last
        ms = (time.perf_counter() - t0) * 1000
        if record:
            statements[label].append(last)
        return ms, got

    def counted(label: str, e: str) -> tuple[float, Any]:
        t0 = time.perf_counter()
        if label == "before":
            rows = old.best_chunks(before, e, COLUMN_WEIGHTS, FETCH)
            ids = list(old.matching_chunk_ids(before, e))
        else:
            rows, matching = pg_keywords.best_chunks_and_matches(after, e, COLUMN_WEIGHTS, FETCH)
            ids = list(matching())
        return (time.perf_counter() - t0) * 1000, (rows, sorted(ids))

    loads = [load()]
    per_query: list[dict[str, list[float]]] = [{"before": [], "after": []} for _ in expressions]
    cpu = {"before": backend_cpu(before), "after": backend_cpu(after)}
    server_cpu: list[dict[str, float]] = [{"before": 0.0, "after": 0.0} for _ in expressions]
    for _ in range(args.repeat - 1):  # extra rounds, for each query's own ratio only
        for i, e in enumerate(expressions):
            for label in ("before", "after") if i % 2 == 0 else ("after", "before"):
                per_query[i][label].append(ranking(label, e, record=False)[0])
    for i, e in enumerate(expressions):
        order = ("before", "after") if i % 2 == 0 else ("after", "before")
        got: dict[str, Any] = {}
        for label in order:
            used = cpu[label]()
            ms, got[label] = ranking(label, e)
            server_cpu[i][label] = (cpu[label]() - used) * 1000
            times[label].append(ms)
            per_query[i][label].append(ms)
        identical += same_ranking(got["before"], got["after"])
        for label in order:
            ms, got[label] = counted(label, e)
            times["counted_" + label].append(ms)
        identical_counted += same_ranking(got["before"][0], got["after"][0]) and (
            got["before"][1] == got["after"][1]
        )
    loads.append(load())
    prepared = {"before": prepared_plans(before), "after": prepared_plans(after)}
    # The planning time of every query's ranking statement, as a custom plan.
    planned = {
        label: [planning_ms(conn, *statements[label][i]) for i in range(len(expressions))]
        for label, conn in (("before", before), ("after", after))
    }
    loads.append(load())
    # The query at the old statement's median, EXPLAINed in both forms.
    middle = sorted(range(len(expressions)), key=lambda i: times["before"][i])[
        len(expressions) // 2
    ]
    warm = [params for _, params in statements["after"][:5]]
    sql_after, params_after = statements["after"][middle]
    sizes = after.execute(
        """SELECT pg_total_relation_size('chunk_keywords')
                  + pg_total_relation_size('keyword_postings')"""
    ).fetchone()[0]
    sizes_before = before.execute(
        """SELECT pg_total_relation_size('chunk_keywords')
                  + pg_total_relation_size('keyword_postings')"""
    ).fetchone()[0]
    chosen, chosen_plans = explain_prepared(after, sql_after, params_after, warm, generic=False)
    forced, forced_plans = explain_prepared(after, sql_after, params_after, warm, generic=True)
    out = {
        "chunks": chunks,
        "queries": len(expressions),
        "before_schema": schema,
        "migrate_s": round(migrate_s, 2),
        "load": [round(x, 2) for x in loads],
        "identical": identical,
        "identical_counted": identical_counted,
        "keyword_tables_mb": {
            "before": round(sizes_before / 2**20, 1),
            "after": round(sizes / 2**20, 1),
        },
        "planning": {label: stats(values) for label, values in planned.items()},
        "prepared": prepared,
        "explained": expressions[middle],
        "explain_before": explain(before, *statements["before"][middle]),
        "explain_after": explain(after, sql_after, params_after),
        "explain_after_prepared": chosen,
        "explain_after_prepared_plans": chosen_plans,
        "explain_after_generic": forced,
        "explain_after_generic_plans": forced_plans,
    }
    for label, values in times.items():
        out[label] = stats(values)
    out["per_query"] = [
        {
            "expression": e,
            **shape,
            "before_ms": round(statistics.median(per_query[i]["before"]), 3),
            "after_ms": round(statistics.median(per_query[i]["after"]), 3),
            "before_cpu_ms": server_cpu[i]["before"],
            "after_cpu_ms": server_cpu[i]["after"],
        }
        for i, (e, shape) in enumerate(
            zip(expressions, query_shapes(after, expressions), strict=True)
        )
    ]
    out["ratio_p50"] = round(out["after"]["p50_ms"] / out["before"]["p50_ms"], 3)
    out["ratio_counted_p50"] = round(
        out["counted_after"]["p50_ms"] / out["counted_before"]["p50_ms"], 3
    )
    before.close()
    after.close()
    return out


def git_commit(directory: Path) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(directory), "log", "-1", "--format=%h"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def planning(plan: str) -> str:
    for line in plan.splitlines():
        if line.startswith("Planning Time"):
            return line.split(":", 1)[1].strip()
    return "?"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# The PostgreSQL keyword ranking statement, {report['before']} against now",
        "",
        f"`{report['command']}` on {report['date']}, {report['machine']}, at {report['commit']}. "
        "Load average (1 min) before the timed loop, after it, and after the planning pass "
        "beside each dataset: the machine is shared. Before and after alternated query by "
        "query (which goes first alternates too). `ranking`: `best_chunks` with the engine's "
        "arguments (300 chunks for 100 documents). `with its count`: the keyword read of a "
        "search that also counts its matches (before `best_chunks` then `matching_chunk_ids`, "
        "now `best_chunks_and_matches`). `identical`: same ids in the same order, ranks within "
        "1e-9 (and the same match ids, for the counted read).",
        "",
        "| dataset | chunks | queries | ranking before p50 / p95 ms | now p50 / p95 ms "
        "| now/before p50 | with its count before p50 / p95 | now p50 / p95 | now/before p50 "
        "| identical | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in report["datasets"].items():
        lines.append(
            f"| {name} | {r['chunks']} | {r['queries']} | {r['before']['p50_ms']} / "
            f"{r['before']['p95_ms']} | {r['after']['p50_ms']} / {r['after']['p95_ms']} | "
            f"**{r['ratio_p50']}** | {r['counted_before']['p50_ms']} / "
            f"{r['counted_before']['p95_ms']} | {r['counted_after']['p50_ms']} / "
            f"{r['counted_after']['p95_ms']} | {r['ratio_counted_p50']} | "
            f"{r['identical']}/{r['queries']}, {r['identical_counted']}/{r['queries']} | "
            f"{' → '.join(map(str, r['load']))} |"
        )
    lines += [
        "",
        "Planning time of every query's ranking statement (EXPLAIN (SUMMARY), the custom plan "
        "its values get), p50 / p95 / max ms:",
        "",
        "| dataset | before | now |",
        "|---|---:|---:|",
    ]
    for name, r in report["datasets"].items():
        b, a = r["planning"]["before"], r["planning"]["after"]
        lines.append(
            f"| {name} | {b['p50_ms']} / {b['p95_ms']} / {b['max_ms']} | "
            f"{a['p50_ms']} / {a['p95_ms']} / {a['max_ms']} |"
        )
    lines += [
        "",
        "The plans the server gave psycopg's prepared keyword statements during the run "
        "(pg_prepared_statements of each connection; a statement is prepared after 5 "
        "executions of its text):",
        "",
        "| dataset | store | statement | generic plans | custom plans |",
        "|---|---|---|---:|---:|",
    ]
    for name, r in report["datasets"].items():
        for label in ("before", "after"):
            for s in r["prepared"][label] or [{"statement": "(none prepared)"}]:
                lines.append(
                    f"| {name} | {label} | `{s['statement']}…` | {s.get('generic_plans', '')} "
                    f"| {s.get('custom_plans', '')} |"
                )
    for name, r in report["datasets"].items():
        lines += ["", f"## {name}: query by query", "", *per_query_table(r["per_query"], GOAL)]
    for name, r in report["datasets"].items():
        chosen = r["explain_after_prepared_plans"]
        lines += [
            "",
            f"## {name}: `{r['explained']}`",
            "",
            f"The query at the old statement's median. Planning: before "
            f"{planning(r['explain_before'])}, now {planning(r['explain_after'])} (custom "
            f"plan), {planning(r['explain_after_prepared'])} prepared after five executions "
            f"(the server's choice: {chosen['generic_plans']} generic, "
            f"{chosen['custom_plans']} custom plans made), "
            f"{planning(r['explain_after_generic'])} (generic plan forced).",
            "",
            "Before:",
            "",
            "```",
            r["explain_before"],
            "```",
            "",
            "Now (custom plan):",
            "",
            "```",
            r["explain_after"],
            "```",
            "",
            "Now, prepared and executed five times first (the server's choice of plan):",
            "",
            "```",
            r["explain_after_prepared"],
            "```",
            "",
            "Now, generic plan (PREPARE, plan_cache_mode = force_generic_plan):",
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
    parser.add_argument(
        "--before-src", required=True, type=Path, help="f9192a3's (or 02ef1b4's) src/"
    )
    parser.add_argument("--max-queries", type=int)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="time each query this many times (each query's ratio is the median of its runs)",
    )
    parser.add_argument("--out", default="pg-ranking-now")
    args = parser.parse_args()
    import platform

    old = old_module(args.before_src)
    report: dict[str, Any] = {
        "command": "python bench/pg_ranking.py " + " ".join(sys.argv[1:]),
        "before": git_commit(args.before_src.parent),
        "commit": git_commit(ROOT),
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
