"""CPU per embedded chunk with busy loops beside it (issue 32 item 4): does OpenVINO's bulk
embedding burn more CPU per chunk when the cores are shared, and which settings keep it
close to the figure without the loops?

Each (variant, busy loops) runs in its own process: SciFact's first --chunks passages,
1,000 characters each as `tsm index` cuts them, embedded in batches of 32 through
`embed_document_batches` (bench/embed_speed.py's method); CPU seconds of the process
(user and system: spinning threads count) per chunk. The busy loops are `yes > /dev/null`
processes started before and killed after each run; runs with and without them alternate,
so the background load (a shared machine) shifts both alike. Every row shows the load.

    .venv/bin/python bench/embed_under_load.py --chunks 128 --rounds 2 --busy 2

Variants: `today` (the backfill worker's OpenVINO: 2 streams of 1 thread, THROUGHPUT
hint) and `one` (1 stream of 1 thread, LATENCY hint). This VM has no SMT (lscpu: 1 thread
per core), so the hyper-threading and core-type properties have nothing to choose.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT.parent / "shared" / "datasets"
VARIANTS = {"today": 2, "one": 1}  # streams (= threads, one per stream)


def texts(count: int) -> list[str]:
    out = []
    with (DATASETS / "scifact" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append(f"{doc['title']}\n{doc['text']}"[:1000])
            if len(out) == count:
                break
    return out


def child(variant: str, chunks: int) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from tsm.embed import embed_document_batches
    from tsm.embed.openvino_e5 import OpenVinoE5Embedder

    model = OpenVinoE5Embedder(VARIANTS[variant])
    batch = texts(chunks)
    model.embed_documents(batch[:4])  # warm
    started = time.perf_counter()
    before = os.times()
    for _ in embed_document_batches(model, (batch[i : i + 32] for i in range(0, len(batch), 32))):
        pass
    after = os.times()
    wall = time.perf_counter() - started
    user, system = after.user - before.user, after.system - before.system
    print(
        json.dumps(
            {
                "cpu_ms_per_chunk": round(1000 * (user + system) / chunks, 1),
                "sys_share": round(system / max(user + system, 1e-9), 3),
                "chunks_per_s": round(chunks / wall, 2),
                "load": round(os.getloadavg()[0], 1),
            }
        )
    )


def run(variant: str, chunks: int, busy: int) -> dict[str, float]:
    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(busy)]
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", variant, "--chunks", str(chunks)],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.chunks)
        return 0
    variants = args.variants.split(",")
    results: dict[tuple[str, int], list[float]] = {}
    print("| round | variant | busy loops | CPU ms / chunk | system share | chunks/s | load |")
    print("|---|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        for variant in variants:
            for busy in (0, args.busy):
                row = run(variant, args.chunks, busy)
                results.setdefault((variant, busy), []).append(row["cpu_ms_per_chunk"])
                print(
                    f"| {round_} | {variant} | {busy} | {row['cpu_ms_per_chunk']} | "
                    f"{row['sys_share']} | {row['chunks_per_s']} | {row['load']} |",
                    flush=True,
                )
    print("\n| variant | CPU ms / chunk, no loops | with loops | ratio |")
    print("|---|---|---|---|")
    for variant in variants:
        quiet = statistics.median(results[(variant, 0)])
        busy = statistics.median(results[(variant, args.busy)])
        print(f"| {variant} | {quiet:.1f} | {busy:.1f} | {busy / quiet:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
