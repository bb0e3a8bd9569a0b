#!/usr/bin/env python3
"""Keyword-only indexing, whole process, side by side: `tsm index --no-embed` (one or more
builds, e.g. a baseline checkout and this one) against qmd's `qmd collection add` (which
indexes the folder's Markdown into its FTS table), on the same Markdown files: JaQuAD and
SciFact laid out one note per document (title as H1, then the text, as bench/retrieval.py
does). Runs are alternated, round by round, each into a fresh index; the machine's load is
printed beside every run.

    python bench/index_vs_qmd.py --rounds 3 \\
        --tsm base=../base-indexspeed/.venv/bin/tsm --tsm this=.venv/bin/tsm \\
        --tsm this-1proc=.venv/bin/tsm@TSM_INDEX_WORKERS=0 \\
        --qmd /path/to/node_modules/.bin/qmd --node-dir /path/to/node22/bin

Reported per run: wall seconds; CPU seconds (user + system of the process and every child
it waited for: tsm's workers, qmd's helpers); the peak of the summed RSS of the process
tree (sampled every 50 ms), its summed PSS, and the largest single process's peak RSS (ru_maxrss).

`--keep-bytecode`: tsm keeps its compiled modules (PYTHONPYCACHEPREFIX in the scratch dir),
as an installed tsm does; without it, a workplace that sets PYTHONDONTWRITEBYTECODE=1 with an
editable install compiles tsm's sources again in every run (about 0.15 s of CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "datasets"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def layout(name: str, folder: Path) -> int:
    """One Markdown note per document of a BEIR set: the title as H1, then the text."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            doc = json.loads(line)
            stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in doc["_id"])
            title = " ".join(doc["title"].split())
            body = f"# {title}\n\n{doc['text']}\n" if title else f"{doc['text']}\n"
            (folder / f"{stem}.md").write_text(body, encoding="utf-8")
            count += 1
    return count


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        here = todo.pop()
        pids.append(here)
        try:
            todo += [int(c) for c in Path(f"/proc/{here}/task/{here}/children").read_text().split()]
        except OSError:
            pass
    return pids


def _memory_kb(pid: int) -> tuple[int, int]:
    """RSS and PSS: PSS splits pages shared between processes (the mapped dictionary, the
    interpreter), so a tree's PSS sum is what it takes from the machine."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """Run `command`; wall, CPU of it and its waited-for children, peak summed RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak_rss = peak_pss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_rss, peak_pss
        while not done.wait(0.05):
            memory = [_memory_kb(p) for p in _tree(proc.pid)]
            peak_rss = max(peak_rss, sum(m[0] for m in memory))
            peak_pss = max(peak_pss, sum(m[1] for m in memory))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall": wall,
        "cpu": cpu,
        "rss_tree_mb": peak_rss / 1024,
        "pss_tree_mb": peak_pss / 1024,
        "rss_max_mb": usage.ru_maxrss / 1024,
    }


def tsm_run(spec: str, folder: Path, scratch: Path, bytecode: bool = False) -> dict[str, float]:
    binary, _, extra = spec.partition("@")
    state = scratch / "tsm-state"
    shutil.rmtree(state, ignore_errors=True)
    env = {**os.environ, "TSM_INDEX_ROOT": str(folder), "TSM_STATE_DIR": str(state)}
    if bytecode:  # as an installed tsm runs: its modules compiled once, kept (in scratch)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    env.update(dict(kv.split("=", 1) for kv in extra.split(",") if kv))
    return timed([binary, "index", "--no-embed", "-f", "json"], folder, env)


def qmd_run(binary: str, node_dir: str | None, folder: Path, scratch: Path, name: str):
    home = scratch / "qmd-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    if node_dir:
        env["PATH"] = f"{node_dir}:{env['PATH']}"
    return timed([binary, "collection", "add", str(folder), "--name", name], folder, env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", nargs="+", default=["jaquad", "scifact"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tsm", action="append", default=[], help="LABEL=BINARY[@ENV=VAL,...]")
    parser.add_argument("--qmd", help="the qmd binary (node_modules/.bin/qmd)")
    parser.add_argument("--node-dir", help="a folder with Node >= 22, put first on PATH for qmd")
    parser.add_argument("--out", type=Path, help="also write the runs here as JSON")
    parser.add_argument(
        "--keep-bytecode",
        action="store_true",
        help="let tsm keep its compiled modules (one warm-up run per build first), as a "
        "`pip install` does, where PYTHONDONTWRITEBYTECODE=1 would compile them every run",
    )
    args = parser.parse_args()
    runners = [tuple(t.split("=", 1)) for t in args.tsm]
    if args.qmd:
        runners.append(("qmd", args.qmd))
    scratch = Path(tempfile.mkdtemp(prefix="index-vs-qmd-"))
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        for name in args.sets:
            folder = scratch / name
            print(f"## {name}: {layout(name, folder)} notes", flush=True)
            results[name] = {label: [] for label, _ in runners}
            if args.keep_bytecode:
                for label, target in runners:
                    if label != "qmd":
                        tsm_run(target, folder, scratch, bytecode=True)
            for round_no in range(1, args.rounds + 1):
                for label, target in runners:
                    before = load()
                    if label == "qmd":
                        run = qmd_run(target, args.node_dir, folder, scratch, name)
                    else:
                        run = tsm_run(target, folder, scratch, args.keep_bytecode)
                    run["load_before"], run["load_after"] = before, load()
                    results[name][label].append(run)
                    print(
                        f"round {round_no} {label:>12}: wall {run['wall']:6.2f} s  cpu "
                        f"{run['cpu']:6.2f} s  rss tree {run['rss_tree_mb']:6.1f} MB  pss tree "
                        f"{run['pss_tree_mb']:6.1f} MB  max "
                        f"{run['rss_max_mb']:6.1f} MB  load {before} -> {run['load_after']}",
                        flush=True,
                    )
            print(
                f"\n| {name} | wall median s | CPU median s | peak PSS tree MB | "
                "wall / qmd | CPU / qmd |\n|---|---:|---:|---:|---:|---:|"
            )
            qmd = results[name].get("qmd")
            for label, runs in results[name].items():
                wall = statistics.median(r["wall"] for r in runs)
                cpu = statistics.median(r["cpu"] for r in runs)
                rss = max(r["pss_tree_mb"] for r in runs)
                ratio = ""
                if qmd:
                    # Paired: each round's run against that round's qmd run, then the median.
                    walls = [r["wall"] / q["wall"] for r, q in zip(runs, qmd, strict=True)]
                    cpus = [r["cpu"] / q["cpu"] for r, q in zip(runs, qmd, strict=True)]
                    ratio = f"{statistics.median(walls):.2f}x | {statistics.median(cpus):.2f}x"
                else:
                    ratio = " | "
                print(f"| {label} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {ratio} |")
            print(flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
