#!/usr/bin/env python3
"""Where the wall time of a whole `tsm index --no-embed` goes: how long each process runs,
waits for a core, or leaves a core idle, phase by phase. No profiler in the process: the
kernel's own accounting (`/proc/PID/task/*/schedstat`: nanoseconds on a CPU, nanoseconds
runnable but waiting for one) is read for every process of the run every few milliseconds.

    python bench/index_timeline.py --set jaquad --tsm .venv/bin/tsm [--workers 0] [--runs 3]

Phases: "start-up" from the exec until the first worker process exists (imports, the
walk, the first files this process parses itself), "pool" while workers exist, "tail"
after the last one has gone (the last stores, removals, the final commit, exit). A run
without workers is one phase. For each: wall, CPU of the writer (the `tsm index` process)
and of the workers, the writer's wait for a core, and the core-seconds nobody of the run
used (cores x wall - CPU): on a quiet machine that is idle, on a busy one other work.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_vs_qmd import layout, load  # noqa: E402

POLL = 0.005


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found += [int(c) for c in text.split()]
    except OSError:
        pass
    return found


def _schedstat(pid: int) -> dict[int, tuple[int, int]]:
    """Each thread's (ns on a CPU, ns waiting for one)."""
    found: dict[int, tuple[int, int]] = {}
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            parts = Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()
            found[int(task)] = (int(parts[0]), int(parts[1]))
    except (OSError, IndexError, ValueError):
        pass
    return found


@dataclass
class Sample:
    at: float
    # pid -> (run ns, wait ns), cumulative
    stats: dict[int, tuple[int, int]] = field(default_factory=dict)


def record(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, list[Sample]]:
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    samples: list[Sample] = []
    started = time.perf_counter()
    known: dict[tuple[int, int], tuple[int, int]] = {}  # (pid, thread) -> last reading
    while proc.poll() is None:
        tree, todo = [], [proc.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo += _children(pid)
        sample = Sample(time.perf_counter() - started)
        for pid in tree:
            for thread, stat in _schedstat(pid).items():
                known[pid, thread] = stat
        # An exited thread or process keeps its last reading.
        sample.stats = {}
        for (pid, _), (run, wait) in known.items():
            was = sample.stats.get(pid, (0, 0))
            sample.stats[pid] = (was[0] + run, was[1] + wait)
        samples.append(sample)
        time.sleep(POLL)
    samples.append(Sample(time.perf_counter() - started, dict(samples[-1].stats)))
    return proc.pid, samples


def _cpu(sample: Sample, pids: set[int], which: int = 0) -> float:
    return sum(v[which] for p, v in sample.stats.items() if p in pids) / 1e9


def phase(name: str, start: Sample, end: Sample, writer: int, workers: set[int], cores: int) -> str:
    wall = end.at - start.at
    w_cpu = _cpu(end, {writer}) - _cpu(start, {writer})
    w_wait = _cpu(end, {writer}, 1) - _cpu(start, {writer}, 1)
    k_cpu = _cpu(end, workers) - _cpu(start, workers)
    k_wait = _cpu(end, workers, 1) - _cpu(start, workers, 1)
    unused = cores * wall - w_cpu - k_cpu
    busy = (w_cpu + k_cpu) / wall if wall > 0 else 0.0
    return (
        f"| {name} | {wall:.2f} | {w_cpu:.2f} | {w_wait:.2f} | {k_cpu:.2f} | {k_wait:.2f} "
        f"| {busy:.2f} | {unused:.2f} |"
    )


def report(writer: int, samples: list[Sample], cores: int) -> list[str]:
    """One line per phase, then the whole run. Phases are cut where a worker first shows
    up and where the workers last used a CPU."""
    workers = {p for s in samples for p in s.stats if p != writer}
    zero, end = Sample(0.0, {}), samples[-1]
    if not workers:
        return [phase("whole run", zero, end, writer, workers, cores)]
    first = next(i for i, s in enumerate(samples) if any(p in s.stats for p in workers))
    last = first
    for i in range(first + 1, len(samples)):
        if _cpu(samples[i], workers) > _cpu(samples[i - 1], workers):
            last = i
    return [
        phase("start-up", zero, samples[first], writer, workers, cores),
        phase("pool", samples[first], samples[last], writer, workers, cores),
        phase("tail", samples[last], end, writer, workers, cores),
        phase("whole run", zero, end, writer, workers, cores),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="jaquad")
    parser.add_argument("--tsm", required=True, help="the tsm binary of the build to time")
    parser.add_argument("--workers", help="TSM_INDEX_WORKERS for the run (default: unset)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--keep-bytecode",
        action="store_true",
        help="keep tsm's compiled modules between runs (one warm-up run first), as an "
        "installed tsm does (bench/index_vs_qmd.py --keep-bytecode)",
    )
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    scratch = Path(tempfile.mkdtemp(prefix="index-timeline-"))
    try:
        folder = scratch / args.set
        notes = layout(args.set, folder)
        print(f"## {args.set}: {notes} notes, TSM_INDEX_WORKERS={args.workers or 'unset'}, "
              f"{cores} cores\n")  # fmt: skip
        print(
            "| phase | wall s | writer CPU s | writer waits for a core s | workers CPU s "
            "| workers wait s | cores busy | core-s unused |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for run in range(0 if args.keep_bytecode else 1, args.runs + 1):
            state = scratch / "state"
            shutil.rmtree(state, ignore_errors=True)
            env = {**os.environ, "TSM_INDEX_ROOT": str(folder), "TSM_STATE_DIR": str(state)}
            if args.keep_bytecode:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
            if args.workers is not None:
                env["TSM_INDEX_WORKERS"] = args.workers
            before = load()
            writer, samples = record(
                [os.path.abspath(args.tsm), "index", "--no-embed", "-f", "json"], folder, env
            )
            if run == 0:  # the warm-up that compiled the modules
                continue
            print(f"| **run {run}**, load {before} -> {load()} | | | | | | | |")
            for line in report(writer, samples, cores):
                print(line)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
