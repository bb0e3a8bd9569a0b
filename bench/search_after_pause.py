"""In-daemon time (took_ms) of Japanese searches made after a 2.5 s pause and right after
another search, on two checkouts' daemons run by this venv (PYTHONPATH), alternated query by
query: what leaving the dictionary to the page cache once searches pause costs the next
search (daemon/services.py, SEARCH_PAUSE_SECONDS).

    VENV/bin/python bench/search_after_pause.py A_DIR B_DIR VAULT   # a root built by
                                                  # bench/resident_memory.py --keep
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = (
    "狩猟免許の更新",
    "先月の会議で決めた予算",
    "東京都の人口",
    "量子計算機の仕組み",
    "機械学習モデルの評価方法",
    "富士山の高さと天気",
    "猫の飼い方",
    "日本の首相",
)
TSM = str(Path(sys.executable).with_name("tsm"))


def main() -> int:
    a, b, vault = (Path(arg).resolve() for arg in sys.argv[1:4])
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    with tempfile.TemporaryDirectory(prefix="tsmpause") as tmp:
        sides = {}
        for name, checkout in (("A", a), ("B", b)):
            root = Path(tmp) / name
            shutil.copytree(vault, root)
            env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
            env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1"}
            sides[name] = env | {"TSM_AUTOSTART": "0", "PYTHONPATH": str(checkout / "src")}

        def run(side: str, *args: str) -> str:
            return subprocess.run(
                [TSM, *args], env=sides[side], capture_output=True, text=True, timeout=600
            ).stdout

        def took(side: str, query: str) -> float:
            return float(json.loads(run(side, "search", query, "-f", "json"))["took_ms"])

        try:
            for side in sides:
                run(side, "start", "-f", "json")
                deadline = time.monotonic() + 600
                while time.monotonic() < deadline:  # until the query worker is on OpenVINO
                    took(side, "warm up")
                    workers = json.loads(run(side, "status", "-f", "json"))["embedder"]["workers"]
                    if workers and all(w.get("engine") == "openvino" for w in workers):
                        break
                    time.sleep(0.5)
                for query in QUERIES:
                    took(side, query)
            paused: dict[str, list[float]] = {side: [] for side in sides}
            burst: dict[str, list[float]] = {side: [] for side in sides}
            load = os.getloadavg()[0]
            for i in range(rounds):
                time.sleep(2.5)
                order = list(sides) if i % 2 == 0 else list(reversed(sides))
                for side in order:
                    paused[side].append(took(side, f"{QUERIES[i % len(QUERIES)]} {i}"))
                for side in order:
                    burst[side].append(took(side, f"{QUERIES[(i + 3) % len(QUERIES)]} {i}"))
            for side, checkout in (("A", a), ("B", b)):
                print(
                    f"{side} {checkout}: after a 2.5 s pause p50 "
                    f"{statistics.median(paused[side]):.1f} ms; right after a search p50 "
                    f"{statistics.median(burst[side]):.1f} ms ({rounds} each)"
                )
            print(f"load {load:.1f} -> {os.getloadavg()[0]:.1f}")
        finally:
            for side in sides:
                run(side, "stop")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
