"""Where one search spends its time on a store: every statement timed at the client (the
`execute` that sends it and waits for its result, and the fetch), labelled by the tsm
function that issued it; the Python time between them (the search's `took_ms` minus its
statements); a cProfile of the searches; and `EXPLAIN (ANALYZE, BUFFERS)` of the slowest
statement of each kind with its real parameters, on PostgreSQL.

It searches an index that bench/pg_team_server.py built and kept (`--keep`), or any index:
the settings come from the environment as for `tsm` itself. The corpus files are written
again (the same paths), so that the search checks its results' files as it does in
production; the workspace id is read back from the store, so they count as this root's.

    python bench/pg_team_server.py --chunks 10000 --clients 1 --seconds 5 --warmup 1 \
        --pg-url "$(scripts/postgres url DIR)" --keep
    python bench/pg_search_profile.py --store-url "postgresql://tsm@/bench_team_PID?host=DIR&port=PORT"
    python bench/pg_search_profile.py --sqlite          # index the corpus into SQLite first
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI, hence `tsm mcp`, sets it
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))
from pg_team_server import EMBEDDER, build_corpus, load_queries  # noqa: E402

SRC = str(ROOT / "src" / "tsm")


@dataclass
class Statement:
    label: str
    sql: str
    params: Any
    ms: float


@dataclass
class Recorder:
    """The statements of the searches run inside `recording`."""

    sent: list[Statement] = field(default_factory=list)
    on: bool = False


def caller_label() -> str:
    """The tsm functions (outermost store/search frame last) that issued a statement."""
    frame = sys._getframe(2)
    names: list[str] = []
    while frame is not None and len(names) < 2:
        path = frame.f_code.co_filename
        if path.startswith(SRC) and not path.endswith(
            ("postgres/connection.py", "pg_search_profile.py")
        ):
            where = Path(path)
            engine = where.parent.name in ("postgres", "sqlite")
            module = f"{where.parent.name}.{where.stem}" if engine else where.stem
            names.append(f"{module}.{frame.f_code.co_name}")
        frame = frame.f_back  # type: ignore[assignment]
    return " < ".join(names) or "?"


def instrument_postgres(conn: Any, recorder: Recorder) -> None:
    import psycopg

    class TimedCursor(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
            if not recorder.on:
                return super().execute(query, params, **kw)
            label = caller_label()
            began = time.perf_counter()
            out = super().execute(query, params, **kw)
            ms = (time.perf_counter() - began) * 1000
            recorder.sent.append(Statement(label, str(query), params, ms))
            return out

    conn.raw.cursor_factory = TimedCursor


def instrument_sqlite(conn: Any, recorder: Recorder) -> None:
    """SQLite runs in process: a statement's time is its step time, which the trace
    callback cannot give; only the count and the labels are recorded (ms 0)."""

    def trace(sql: str) -> None:
        if recorder.on and not sql.startswith("--"):
            recorder.sent.append(Statement(caller_label(), sql, None, 0.0))

    conn.set_trace_callback(trace)


def backend_pid(conn: Any) -> int:
    return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def backend_cpu(pid: int | None) -> float:
    """The CPU seconds (user + system) a PostgreSQL backend on this machine has used."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settings_env(args: argparse.Namespace, root: Path, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {
        "TSM_INDEX_ROOT": str(root),
        "TSM_STATE_DIR": str(state),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_EMBEDDER": EMBEDDER,
        "TSM_AUTOSTART": "0",
        "TSM_CHUNK_CHARS": "1000",
    }
    if args.store_url:
        env["TSM_STORE_URL"] = args.store_url
    return env


def adopt_workspace(url: str, state: Path) -> None:
    """The state dir's workspace id: the one the kept store's documents were written with."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT workspace FROM documents GROUP BY workspace ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    if row and row[0]:
        (state / "workspace-id").write_text(row[0] + "\n")
        os.chmod(state / "workspace-id", 0o600)


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def summarise(searches: list[tuple[float, list[Statement]]]) -> dict[str, Any]:
    by_label: dict[str, list[float]] = defaultdict(list)
    per_search_sql: list[float] = []
    per_search_python: list[float] = []
    counts: list[int] = []
    for took, sent in searches:
        sql_ms = sum(s.ms for s in sent)
        per_search_sql.append(sql_ms)
        per_search_python.append(took - sql_ms)
        counts.append(len(sent))
        for s in sent:
            by_label[s.label].append(s.ms)
    n = len(searches)
    rows = sorted(by_label.items(), key=lambda kv: -sum(kv[1]))
    return {
        "searches": n,
        "took_p50": statistics.median(t for t, _ in searches),
        "took_mean": statistics.fmean(t for t, _ in searches),
        "sql_mean": statistics.fmean(per_search_sql),
        "python_mean": statistics.fmean(per_search_python),
        "statements_mean": statistics.fmean(counts),
        "labels": [
            {
                "label": label,
                "per_search": round(len(ms) / n, 2),
                "mean_ms": round(statistics.fmean(ms), 2),
                "p50_ms": round(statistics.median(ms), 2),
                "max_ms": round(max(ms), 2),
                "ms_per_search": round(sum(ms) / n, 2),
            }
            for label, ms in rows
        ],
    }


def explain(conn: Any, statement: Statement, generic: bool) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of a statement with its parameters: as an unnamed
    statement (a custom plan, what psycopg runs before it prepares), or prepared and forced
    to its generic plan (what a prepared statement may settle on)."""
    from tsm.store.postgres.connection import _translate

    raw = conn.raw
    sql = statement.sql
    if generic:
        from psycopg import sql as psql

        cur = raw.cursor()
        cur.execute("SET plan_cache_mode = force_generic_plan")
        try:
            name = "profile_generic"
            # PREPARE from the psycopg text: `%s` → $n
            parts = sql.split("%s")
            numbered = "".join(
                part + (f"${i + 1}" if i < len(parts) - 1 else "") for i, part in enumerate(parts)
            ).replace("%%", "%")
            cur.execute(f"PREPARE {name} AS {numbered}")
            literals = psql.SQL(", ").join(psql.Literal(p) for p in statement.params or ())
            query = psql.SQL("EXPLAIN (ANALYZE, BUFFERS) EXECUTE {} ({})").format(
                psql.Identifier(name), literals
            )
            lines = [r[0] for r in cur.execute(query)]
            cur.execute(f"DEALLOCATE {name}")
        finally:
            cur.execute("RESET plan_cache_mode")
        return "\n".join(lines)
    del _translate
    cur = raw.cursor()
    rows = cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, statement.params, prepare=False)
    return "\n".join(r[0] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store-url", help="a PostgreSQL store (default: SQLite)")
    parser.add_argument("--sqlite", action="store_true", help="index the corpus into SQLite")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200, help="searches timed")
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--profile", type=int, default=100, help="searches under cProfile")
    parser.add_argument("--explain", type=int, default=6, help="statement kinds explained")
    parser.add_argument("--prepare-threshold", default="default", help="psycopg's, or none")
    parser.add_argument("--out", help="write the summary as JSON here")
    args = parser.parse_args()
    from tsm import config
    from tsm.core.knowledge import LocalKnowledge
    from tsm.core.request import SearchRequest, clock

    queries = load_queries(400)
    with tempfile.TemporaryDirectory(prefix="tsm-profile-") as tmp:
        root = Path(tmp) / "corpus"
        print("corpus:", build_corpus(root, args.chunks, 1000), flush=True)
        state = Path(tmp) / "state"
        if args.store_url:
            adopt_workspace(args.store_url, state)
        env = settings_env(args, root, state)
        with environment(env):
            settings = config.load(root)
            knowledge = LocalKnowledge(settings)
            if not args.store_url:
                began = time.perf_counter()
                knowledge.index()
                print(f"indexed into SQLite in {time.perf_counter() - began:.1f} s", flush=True)
            conn = knowledge.conn()
            recorder = Recorder()
            postgres = getattr(conn, "raw", None) is not None
            if postgres:
                if args.prepare_threshold != "default":
                    conn.raw.prepare_threshold = (
                        None if args.prepare_threshold == "none" else int(args.prepare_threshold)
                    )
                instrument_postgres(conn, recorder)
            else:
                instrument_sqlite(conn, recorder)

            def one(query: str) -> tuple[float, list[Statement]]:
                recorder.sent = []
                result = knowledge.search(SearchRequest(query, now=clock()))
                return result.took_ms, recorder.sent

            for q in queries[: args.warmup]:
                knowledge.search(SearchRequest(q, now=clock()))
            backend = backend_pid(conn) if postgres else None
            recorder.on = True
            load = os.getloadavg()
            cpu = time.process_time(), backend_cpu(backend)
            searches = [one(queries[i % len(queries)]) for i in range(args.queries)]
            cpu_after = time.process_time(), backend_cpu(backend)
            load_after = os.getloadavg()
            recorder.on = False
            summary = summarise(searches)
            # CPU time per search: what the work costs, whatever the machine's other load
            # adds to the wall time (each round trip waits for the other process's turn).
            summary["client_cpu_ms"] = (cpu_after[0] - cpu[0]) * 1000 / args.queries
            summary["server_cpu_ms"] = (
                (cpu_after[1] - cpu[1]) * 1000 / args.queries if backend else None
            )
            summary["load"] = [round(x, 2) for x in load]
            summary["load_after"] = [round(x, 2) for x in load_after]
            print(json.dumps(summary, indent=1), flush=True)

            profiler = cProfile.Profile()
            profiler.enable()
            for i in range(args.profile):
                knowledge.search(SearchRequest(queries[i % len(queries)], now=clock()))
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(45)
            print(text.getvalue(), flush=True)
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
            print(text.getvalue(), flush=True)

            if postgres and args.explain:
                slowest: dict[str, Statement] = {}
                for _, sent in searches:
                    for s in sent:
                        if s.label not in slowest or s.ms > slowest[s.label].ms:
                            slowest[s.label] = s
                kinds = sorted(slowest.values(), key=lambda s: -s.ms)[: args.explain]
                for s in kinds:
                    print(f"\n=== {s.label}: {s.ms:.1f} ms as run\n{s.sql.strip()}\n")
                    print("--- custom plan (as an unnamed statement)")
                    print(explain(conn, s, generic=False))
                    print("--- generic plan (prepared, plan_cache_mode = force_generic_plan)")
                    try:
                        print(explain(conn, s, generic=True))
                    except Exception as exc:  # a statement PREPARE cannot type
                        print(f"(not prepared: {type(exc).__name__}: {exc})")
                        conn.raw.rollback() if conn.in_transaction else None
            if args.out:
                Path(args.out).write_text(json.dumps(summary, indent=1))
            knowledge.close()


if __name__ == "__main__":
    main()
