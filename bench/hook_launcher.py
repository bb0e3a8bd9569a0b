"""What the plugin's hook launcher (plugin/hooks/run-hook.sh) costs before a hook starts: the
launcher of a git revision against this checkout's, each running an empty hook script
(`python3 -E noop.py`), alternated run by run, as Claude Code starts it: `/bin/sh
run-hook.sh NAME` in a session folder, with CLAUDE_PROJECT_DIR and HOME set.

    python bench/hook_launcher.py --base HEAD~1 --runs 200
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = Path("plugin/hooks/run-hook.sh")


def launcher_copy(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "run-hook.sh").write_text(text, encoding="utf-8")
    (folder / "noop.py").write_text("", encoding="utf-8")
    return folder / "run-hook.sh"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the git revision to compare with")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--python-dir",
        default=str(Path(os.path.realpath(sys.executable)).parent),
        help="first on PATH (default: this interpreter's own folder, not a shim)",
    )
    args = parser.parse_args()
    base_text = subprocess.run(
        ["git", "show", f"{args.base}:{LAUNCHER}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        launchers = {
            args.base: launcher_copy(work / "base", base_text),
            "this": launcher_copy(work / "this", (ROOT / LAUNCHER).read_text(encoding="utf-8")),
        }
        session = work / "project" / "repo"
        session.mkdir(parents=True)
        env = {
            "PATH": os.pathsep.join([args.python_dir, os.environ["PATH"]]),
            "HOME": os.environ.get("HOME", str(work)),
            "CLAUDE_PROJECT_DIR": str(session.parent),
        }
        times: dict[str, list[float]] = {label: [] for label in launchers}
        load = os.getloadavg()[0]
        for i in range(args.runs):
            order = list(launchers.items())
            for label, script in order if i % 2 == 0 else order[::-1]:
                started = time.perf_counter()
                subprocess.run(["/bin/sh", str(script), "noop"], cwd=session, env=env, check=True)
                times[label].append((time.perf_counter() - started) * 1000)
        shutil.rmtree(work / "project")
    print(
        f"{args.runs} runs each, alternated; 1-min load {load:.2f} -> {os.getloadavg()[0]:.2f}; "
        f"python3 from {args.python_dir}"
    )
    for label, values in times.items():
        values.sort()
        print(
            f"{label:>10}: median {statistics.median(values):.2f} ms, "
            f"p90 {values[int(0.9 * (len(values) - 1))]:.2f} ms"
        )


if __name__ == "__main__":
    main()
