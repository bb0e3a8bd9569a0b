#!/usr/bin/env python3
"""What a command's start-up costs, two source trees alternated (A, B, B, A …): the wall time
of `tsm index` over a one-note vault that is already indexed (what the PostToolUse hook
runs after an edit), and `python -X importtime`'s cumulative time for `tsm.cli.main`.

    git worktree add ../base 073c3c8
    python bench/cli_startup_ab.py --base ../base/src --pairs 30

Each tree runs with its `src` first on PYTHONPATH under this interpreter, with a state dir of
its own. Prints the medians and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other tree's src folder")
    parser.add_argument("--pairs", type=int, default=30)
    args = parser.parse_args()
    trees = {"base": str(Path(args.base).resolve()), "now": str(ROOT / "src")}
    work = Path(tempfile.mkdtemp(prefix="tsm-startup-"))
    vault = work / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A note\n\nSome text about LoRa.\n", encoding="utf-8")
    wall: dict[str, list[float]] = {k: [] for k in trees}
    imports: dict[str, list[float]] = {k: [] for k in trees}
    print(f"load before {os.getloadavg()[0]:.2f}")
    for i in range(args.pairs):
        for name in ("base", "now") if i % 2 else ("now", "base"):
            env = {
                **os.environ,
                "PYTHONPATH": trees[name],
                "TSM_INDEX_ROOT": str(vault),
                "TSM_STATE_DIR": str(work / f"state-{name}"),
                "TSM_NO_USER_CONFIG": "1",
                "TSM_AUTOSTART": "0",
            }
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json"],
                env=env,
                cwd=vault,
                check=True,
                capture_output=True,
            )
            wall[name].append((time.perf_counter() - started) * 1000)
            log = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", "import tsm.cli.main"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stderr
            line = next(x for x in log.splitlines() if x.endswith("| tsm.cli.main"))
            imports[name].append(int(line.split("|")[1]) / 1000)
    for name in trees:
        print(
            f"{name}: tsm index (one unchanged note) median {statistics.median(wall[name]):.1f} ms;"
            f" import tsm.cli.main median {statistics.median(imports[name]):.1f} ms"
        )
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
