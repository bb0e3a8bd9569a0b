"""What dating notes by their last commit costs (sources/commit_dates.py): a repository of
FILES notes and COMMITS commits is built with `git fast-import`, then

- the one `git log` an index run reads, for every file (the whole history is read when a
  file was committed first and never again), and for one file (the daemon's re-index of
  an edited note: the log stops at its first commit);
- `tsm index --no-embed` of the whole tree with git, and without it (PATH without git:
  the mtime, as before).

    python bench/commit_dates.py                       # 2,000 notes, 20,000 commits
    python bench/commit_dates.py --files 500 --commits 2000
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tsm.sources.commit_dates import CommitDates

INDEX = [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json"]


def build(repo: Path, files: int, commits: int) -> None:
    """`commits` commits, each changing 1-3 random notes (every note in the first)."""
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    rng = random.Random(7)
    lines: list[str] = []
    stamp = 1_600_000_000
    for n in range(commits):
        touched = range(files) if n == 0 else rng.sample(range(files), rng.randint(1, 3))
        message = f"commit {n}"
        lines += [
            "commit refs/heads/main",
            f"committer Bench <bench@example.org> {stamp + n * 600} +0000",
            f"data {len(message)}",
            message,
        ]
        for f in touched:
            body = f"# Note {f}\n\nrevision {n} of note {f}\n"
            lines += [f"M 644 inline notes/{f // 100:02d}/note-{f}.md", f"data {len(body)}", body]
        lines.append("")
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        input="\n".join(lines).encode(),
        check=True,
    )
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)


def index(env: dict[str, str]) -> None:
    subprocess.run(INDEX, env=env, check=True, stdout=subprocess.DEVNULL)


def timed(work: object) -> float:
    started = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=20000)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tsm-commit-dates-"))
    try:
        repo = base / "repo"
        took = timed(lambda: build(repo, args.files, args.commits))
        notes = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.md"))
        print(f"{len(notes):,} notes, {args.commits:,} commits (built in {took:.1f} s)\n")
        print("| what | s |\n|---|---:|")
        dates = CommitDates(repo, notes)
        took = timed(lambda: [dates.of(rel) for rel in notes])
        dated = sum(1 for rel in notes if dates.of(rel) is not None)
        print(f"| git log read for all {len(notes):,} notes ({dated:,} dated) | {took:.3f} |")
        one = CommitDates(repo, notes[:1])
        print(f"| git log read for one note | {timed(lambda: one.of(notes[0])):.3f} |")
        for label, path in (("with git", os.environ["PATH"]), ("without git", str(base))):
            state = base / f"state-{label.replace(' ', '-')}"
            env = {**os.environ, "TSM_INDEX_ROOT": str(repo), "TSM_STATE_DIR": str(state)}
            env |= {"TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0", "PATH": path}
            took = timed(lambda env=env: index(env))
            with sqlite3.connect(state / "tsm.db") as db:
                sources = db.execute(
                    "SELECT date_source, COUNT(*) FROM documents GROUP BY 1 ORDER BY 1"
                ).fetchall()
            shown = ", ".join(f"{n:,} {source}" for source, n in sources)
            print(f"| tsm index --no-embed, {label} (dates: {shown}) | {took:.2f} |")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
