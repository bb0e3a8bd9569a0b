"""Indexing throughput, incremental re-index cost, in-process FTS latency and CLI cold
start, on a generated vault of mixed English/Japanese notes (~2 KB each).

    python bench/indexing_speed.py --notes 10000

Embedding is measured separately (bench/retrieval.py reports chunks/s of the model); here
`index` runs FTS only, as `tsm index --no-embed` does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import generate  # noqa: E402

from tsm.config import load  # noqa: E402
from tsm.core.knowledge import LocalKnowledge  # noqa: E402
from tsm.search.query import build_query  # noqa: E402

QUERIES = [
    "git install",
    "狩猟 免許",
    "sqlite index latency",
    "無線 通信 距離",
    "battery power",
    "捕獲報告アプリ",
    "design decision meeting",
    "データベース 設計",
    "lora range test",
    "会議 決定",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed_cli(args: list[str], env: dict[str, str], runs: int = 10) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tsm", *args], env=env, capture_output=True, check=True
        )
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), pct(times, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsm-bench-index-") as tmp:
        root = Path(tmp)
        size = generate(root, args.notes)
        # No daemon: this measures the one-shot in-process path (daemon_latency.py the other).
        env = {
            **os.environ,
            "TSM_INDEX_ROOT": str(root),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_EMBEDDER": "none",
            "TSM_AUTOSTART": "0",
        }
        settings = load(root, env)
        backend = LocalKnowledge(settings)
        started = time.perf_counter()
        report = backend.index(embed=False)
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        again = backend.index(embed=False)
        rerun = time.perf_counter() - started
        (root / "notes" / "00" / "note-3.md").write_text("# edited\n\nnew text\n")
        started = time.perf_counter()
        edited = backend.index(embed=False)
        edit_seconds = time.perf_counter() - started
        latencies = []
        for _ in range(5):
            for q in QUERIES:
                query = build_query(q, today=__import__("datetime").date.today(), mode="fts")
                started = time.perf_counter()
                backend.run_query(query)
                latencies.append((time.perf_counter() - started) * 1000)
        backend.close()
        help_p50, help_p95 = timed_cli(["--help"], env)
        search_p50, search_p95 = timed_cli(
            ["search", "git install", "--fts-only", "-f", "json"], env
        )
        print(
            f"| metric ({args.notes} notes, {size / 1e6:.1f} MB, {os.cpu_count()} cores) | value |"
        )
        print("|---|---:|")
        print(
            f"| full index (FTS, no embedding) | {seconds:.1f} s = "
            f"{report.indexed / seconds:.0f} notes/s, {size / 1e6 / seconds:.2f} MB/s, "
            f"{report.chunks} chunks |"
        )
        print(
            f"| re-index, nothing changed | {rerun * 1000:.0f} ms "
            f"({again.unchanged} unchanged, {again.indexed} indexed) |"
        )
        print(
            f"| re-index after editing 1 note | {edit_seconds * 1000:.0f} ms "
            f"({edited.indexed} indexed) |"
        )
        print(
            f"| FTS search in-process p50 / p95 | {statistics.median(latencies):.1f} / "
            f"{pct(latencies, 0.95):.1f} ms |"
        )
        print(f"| `tsm --help` cold start p50 / p95 | {help_p50:.0f} / {help_p95:.0f} ms |")
        print(
            f"| `tsm search --fts-only` (new process) p50 / p95 | {search_p50:.0f} / "
            f"{search_p95:.0f} ms |"
        )


if __name__ == "__main__":
    main()
