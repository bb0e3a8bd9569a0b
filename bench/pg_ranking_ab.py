"""The PostgreSQL keyword ranking of two checkouts, same database, same run: each query's
`best_chunks` and `best_chunks_and_matches` through each checkout's store/postgres/keywords.py,
alternated query by query (which goes first alternates too, and again in the second pass);
the server's own execution time of the ranking statement (EXPLAIN (ANALYZE, TIMING OFF) with
the generic plan a warm connection runs); and the planning time of each query's custom plan
(what a new connection, `tsm search` without the daemon, pays). Both must rank alike.

    # a database with the keyword index of a dataset, at this checkout's schema:
    python bench/pg_keywords.py jaquad scifact --url URL     # leaves bench_kw_<dataset>
    git worktree add ../base HEAD~1
    python bench/pg_ranking_ab.py --url URL --base-src ../base/src jaquad scifact

`URL` names the server; each dataset's database is `bench_kw_<dataset>` on it unless
`--database` says otherwise (`--database jaquad=bench_kw_jaquad_m007`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tsm.search.fts import COLUMN_WEIGHTS, match_expression  # noqa: E402
from tsm.store.postgres import connection as postgres  # noqa: E402
from tsm.store.postgres import keywords as this_keywords  # noqa: E402
from tsm.text.tokenizer import get_tokenizer  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "bench" / "results"
FETCH = 300  # search/fts.py asks 3 x 100 chunks for 100 documents


def base_module(src: Path) -> ModuleType:
    """The other checkout's store/postgres/keywords.py, imported beside this one's."""
    spec = importlib.util.spec_from_file_location(
        "tsm.store.postgres.keywords_base", src / "tsm" / "store" / "postgres" / "keywords.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def ranking_statement(module: ModuleType, expression: str) -> tuple[str, list[Any]]:
    """The full `best_chunks` statement and its parameters, as the module builds them."""
    query = module.Query.parse(expression)
    ranked = module._ranked(query, COLUMN_WEIGHTS)
    sql, params = ranked if isinstance(ranked, tuple) else (module.RANKED, ranked)
    full = f"""SELECT chunk_id, document_id, rank FROM ({sql} ORDER BY rank, chunk_id LIMIT ?) r
               ORDER BY rank, document_id, chunk_id"""
    return postgres._translate(full), postgres._storable([*params, FETCH])


def expressions(dataset: str, limit: int) -> list[str]:
    tokenizer = get_tokenizer()
    out: list[str] = []
    with (DATASETS / dataset / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            expression = match_expression(tokenizer.query_terms(json.loads(line)["text"]))
            if expression:
                out.append(expression)
            if len(out) >= limit:
                break
    return out


def summary(values: list[float]) -> str:
    v = sorted(values)
    return f"{statistics.median(v):.3f} / {v[int(0.95 * (len(v) - 1))]:.3f} / {v[-1]:.3f}"


def timed_calls(
    modules: dict[str, tuple[ModuleType, Any]], exprs: list[str]
) -> dict[str, dict[str, Any]]:
    """Client-side wall time of each call, both checkouts alternated; identical results."""
    calls: dict[str, Callable[[ModuleType, Any, str], Any]] = {
        "best_chunks": lambda m, c, e: m.best_chunks(c, e, COLUMN_WEIGHTS, FETCH),
        "best_chunks_and_matches": lambda m, c, e: (lambda r: (r[0], r[1]()))(
            m.best_chunks_and_matches(c, e, COLUMN_WEIGHTS, FETCH)
        ),
    }
    out: dict[str, dict[str, Any]] = {}
    for name, call in calls.items():
        for e in exprs[:10]:  # past psycopg's preparing and the server's custom plans
            for module, conn in modules.values():
                call(module, conn, e)
        times: dict[str, list[float]] = {label: [] for label in modules}
        identical = 0
        for rep in range(2):
            for i, e in enumerate(exprs):
                order = list(modules.items())
                got = {}
                for label, (module, conn) in order if (i + rep) % 2 == 0 else order[::-1]:
                    started = time.perf_counter()
                    got[label] = call(module, conn, e)
                    times[label].append((time.perf_counter() - started) * 1000)
                identical += got["base"] == got["this"]
        ratios = [b / a for a, b in zip(times["base"], times["this"], strict=True)]
        out[name] = {
            "base_ms": summary(times["base"]),
            "this_ms": summary(times["this"]),
            "median_ratio": statistics.median(ratios),
            "identical": f"{identical}/{len(ratios)}",
        }
    return out


def server_times(raw: Any, modules: dict[str, ModuleType], exprs: list[str]) -> dict[str, Any]:
    """The server's execution time (generic plans, as a warm connection runs them) and each
    query's custom-plan planning time, both checkouts alternated."""
    execution: dict[str, list[float]] = {label: [] for label in modules}
    planning: dict[str, list[float]] = {label: [] for label in modules}
    for i, e in enumerate(exprs):
        order = list(modules.items())
        for label, module in order if i % 2 == 0 else order[::-1]:
            sql, params = ranking_statement(module, e)
            raw.execute("SET plan_cache_mode = force_generic_plan")
            plan = raw.execute(
                "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY) " + sql, params, prepare=True
            ).fetchall()
            raw.execute("RESET plan_cache_mode")
            execution[label].append(_ms(plan, "Execution"))
            plan = raw.execute("EXPLAIN (SUMMARY) " + sql, params, prepare=False).fetchall()
            planning[label].append(_ms(plan, "Planning"))
    ratios = [b / a for a, b in zip(execution["base"], execution["this"], strict=True)]
    return {
        "execution_ms": {label: summary(v) for label, v in execution.items()},
        "execution_median_ratio": statistics.median(ratios),
        "planning_ms": {label: summary(v) for label, v in planning.items()},
    }


def _ms(plan: list[Any], what: str) -> float:
    text = "\n".join(row[0] for row in plan)
    found = re.search(rf"{what} Time: ([\d.]+) ms", text)
    assert found, text
    return float(found.group(1))


def database_url(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--url", required=True, help="the PostgreSQL server")
    parser.add_argument("--base-src", type=Path, required=True, help="the other checkout's src")
    parser.add_argument("--database", action="append", default=[], help="DATASET=DBNAME")
    parser.add_argument("--max-queries", type=int, default=400)
    parser.add_argument("--out", help="bench/results/<out>.md and .json")
    args = parser.parse_args()
    import psycopg

    databases = dict(d.split("=", 1) for d in args.database)
    base = base_module(args.base_src.resolve())
    lines = [
        f"`python bench/pg_ranking_ab.py {' '.join(sys.argv[1:])}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; base = `{args.base_src}`, "
        "this = this checkout. Times in ms, p50 / p95 / max; ratios this/base, the median of "
        "each query's own.",
        "",
        "| dataset | queries | measure | base | this | ratio | identical | load |",
        "|---|---:|---|---|---|---:|---:|---|",
    ]
    report: dict[str, Any] = {}
    for dataset in args.datasets:
        url = database_url(args.url, databases.get(dataset, f"bench_kw_{dataset}"))
        exprs = expressions(dataset, args.max_queries)
        load = f"{os.getloadavg()[0]:.2f}"
        modules = {
            "base": (base, postgres.connect(url)),
            "this": (this_keywords, postgres.connect(url)),
        }
        calls = timed_calls(modules, exprs)
        with psycopg.connect(url, autocommit=True) as raw:
            server = server_times(raw, {k: m for k, (m, _) in modules.items()}, exprs)
        load += f" → {os.getloadavg()[0]:.2f}"
        report[dataset] = {"queries": len(exprs), "calls": calls, "server": server, "load": load}
        for name, c in calls.items():
            lines.append(
                f"| {dataset} | {len(exprs)} | {name}, client | {c['base_ms']} | "
                f"{c['this_ms']} | {c['median_ratio']:.3f} | {c['identical']} | {load} |"
            )
        e, p = server["execution_ms"], server["planning_ms"]
        lines.append(
            f"| {dataset} | {len(exprs)} | ranking, server execution (generic plan) | "
            f"{e['base']} | {e['this']} | {server['execution_median_ratio']:.3f} | | {load} |"
        )
        lines.append(
            f"| {dataset} | {len(exprs)} | ranking, planning (custom plan) | "
            f"{p['base']} | {p['this']} | | | {load} |"
        )
    print("\n".join(lines))
    if args.out:
        (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
