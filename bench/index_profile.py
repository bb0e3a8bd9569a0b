#!/usr/bin/env python3
"""Where a whole `tsm index --no-embed` spends its CPU, stage by stage: the run is sampled by
py-spy (every process of it, workers included, `--subprocesses`), and each sample is put in
the first stage below whose frames it holds. A sampler, not cProfile: a profiler that hooks
every call inflates small Python calls (the per-morpheme loop) several times over.

    pip install py-spy
    python bench/index_profile.py --set jaquad --tsm .venv/bin/tsm [--workers 0] [--rate 500]

The notes are laid out as bench/index_vs_qmd.py lays them (one Markdown note per document),
into a fresh index root and state dir. Prints seconds per stage and process (writer, each
worker), and the machine's load before and after.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_vs_qmd import layout, load  # noqa: E402

# (stage, pattern): a sample goes to the first stage whose pattern its stack (frames joined
# by ";", outermost first, as py-spy writes them) matches, so the specific stages come first.
STAGES: list[tuple[str, str]] = [
    ("pool: results back (unpickled by the writer's thread)", r"_ExecutorManagerThread"),
    ("pool: jobs out (pickled by the writer's thread)", r"_feed \("),
    ("pool: start the workers", r"WorkAhead\._start|_launch_processes|_adjust_process_count"),
    ("worker: jobs in, results out", r"_process_worker(?!.*_run_batch)"),
    ("worker: start-up (interpreter, imports)", r"spawn_main(?!.*_process_worker)"),
    ("store: read the file again, hash", r"\.store \(tsm/indexing[^;]*;load_bytes"),
    ("store: BEGIN", r"Transaction\.__enter__"),
    ("store: COMMIT", r"Transaction\.__exit__|_Group\.|grouped \("),
    ("store: chunks INSERT", r"insert_chunks \("),
    ("store: FTS5 INSERT", r"insert \(tsm/store/sqlite/keywords"),
    ("store: document, tags, links, names INSERT", r"write_document \("),
    ("store: look-ups (stored row, twins, old rows)", r"stored_and_twins|remove_path|touch \("),
    ("store: other", r"_locked \("),
    ("tokenize: SudachiPy tokenize()", r"_Analyzer\.terms \(tsm/text/tokenizer\.py:{tokenize}\)$"),
    ("tokenize: per-morpheme Python", r"_Analyzer\.terms \("),
    ("tokenize: dictionary load", r"_analyzer \(|_Analyzer\.of"),
    ("tokenize: NFKC, case, regex runs", r"index_text \("),
    ("prepare: chunking, passage hash, rows", r"prepare \(tsm/indexing"),
    ("parse: the reader (Markdown)", r"_parse \(tsm/indexing|parse_file \("),
    ("read the file (first read), hash", r"load_bytes|_index_file_once \("),
    ("dates (path, git)", r"_with_date|CommitDates"),
    ("walk", r"discover \(|walk \(tsm"),
    ("decide: stat, stored rows", r"_index_file \(|_changed_size|_changed_files|stored_file"),
    ("after the files: removals", r"index_paths \("),
    ("start-up: imports", r"_find_and_load"),
]
# A child's stack starts with its parent's process frame, then its own.
_PROCESS = re.compile(r'process (\d+):"')


def tokenize_line(tsm: str) -> int:
    """The line of `_Analyzer.terms` that calls SudachiPy, in the build being profiled."""
    source = Path(tsm).resolve().parents[2] / "src" / "tsm" / "text" / "tokenizer.py"
    lines = source.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if "in tokenize(" in line)


def classify(stack: str, rules: list[tuple[str, re.Pattern[str]]]) -> str:
    for stage, pattern in rules:
        if pattern.search(stack):
            return stage
    return "other: start-up, CLI, output, exit"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="jaquad")
    parser.add_argument("--tsm", required=True, help="the tsm binary of the build to profile")
    parser.add_argument("--workers", help="TSM_INDEX_WORKERS for the run (default: unset)")
    parser.add_argument("--rate", type=int, default=500, help="samples a second")
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    parser.add_argument("--replay", type=Path, help="read these collapsed stacks; run nothing")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    scratch = Path(tempfile.mkdtemp(prefix="index-profile-"))
    try:
        raw, before, wall, notes = args.replay or args.raw or scratch / "raw.txt", load(), 0.0, 0
        if not args.replay:
            folder = scratch / args.set
            notes = layout(args.set, folder)
            env = {**os.environ, "TSM_INDEX_ROOT": str(folder)}
            env["TSM_STATE_DIR"] = str(scratch / "state")
            if args.workers is not None:
                env["TSM_INDEX_WORKERS"] = args.workers
            started = time.perf_counter()
            subprocess.run(
                [spy, "record", "--subprocesses", "--nonblocking", "--rate", str(args.rate),
                 "--format", "raw", "--output", str(raw), "--",
                 args.tsm, "index", "--no-embed", "-f", "json"],
                cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            wall = time.perf_counter() - started
        line = tokenize_line(args.tsm)
        rules = [(stage, re.compile(p.replace("{tokenize}", str(line)))) for stage, p in STAGES]
        per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        names: dict[str, str] = {}
        first: dict[str, str] = {}
        for row in raw.read_text().splitlines():
            stack, _, count = row.rpartition(" ")
            processes = list(_PROCESS.finditer(stack))
            pid = processes[-1].group(1) if processes else "?"
            first.setdefault(pid, "")
            if "_process_worker" in stack or "spawn_main" in stack:
                names[pid] = "worker"
            if "_process_worker" in stack:  # a forked worker's stack starts with the writer's
                stack = stack[stack.index("_process_worker") :]
            per[pid][classify(stack, rules)] += int(count)
        for pid in first:
            names.setdefault(pid, "writer")
        print(
            f"## {args.set}: {notes} notes, TSM_INDEX_WORKERS={args.workers or 'unset'}, "
            f"wall {wall:.2f} s under py-spy at {args.rate}/s, load {before} -> {load()}\n"
        )
        order = sorted(per, key=lambda p: (names.get(p) != "writer", p))
        heads = [f"{names.get(p, '?')} {p}" for p in order]
        print("| stage | " + " | ".join(heads) + " | all |")
        print("|---|" + "---:|" * (len(order) + 1))
        stages = collections.Counter[str]()
        for pid in order:
            stages.update(per[pid])
        for stage, total in stages.most_common():
            cells = [f"{per[p][stage] / args.rate:.2f}" for p in order]
            print(f"| {stage} | " + " | ".join(cells) + f" | {total / args.rate:.2f} |")
        sums = [f"{sum(per[p].values()) / args.rate:.2f}" for p in order]
        total_s = sum(stages.values()) / args.rate
        print("| **all samples, s** | " + " | ".join(sums) + f" | {total_s:.2f} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
