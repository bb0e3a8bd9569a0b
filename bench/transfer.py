"""`tsm export` and `tsm import` on a real index, through the real CLI: SQLite -> file ->
PostgreSQL -> file -> a new SQLite, each step timed, the two files compared record for
record (everything but the header must be identical: nothing lost or changed either way).

    python bench/transfer.py --db /path/to/.tsm/tsm.db            # a copy of it is used
    python bench/transfer.py --db ... --url postgresql://...      # your own (empty) database

Without --url a server is started by scripts/postgres in a temp dir (fsync on) and stopped
after. The import's time includes rebuilding every keyword row with the tokenizer (the
import re-tokenizes the stored text; it re-embeds nothing). Results: bench/results/transfer.md
and .json, with the load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SCRIPT = ROOT / "scripts" / "postgres"


def tsm(env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", *args, "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"tsm {' '.join(args)} failed: {proc.stderr.strip()}")
    return took, json.loads(proc.stdout)


def records(file: Path) -> list[str]:
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="an SQLite index (copied)")
    parser.add_argument("--url", help="an empty PostgreSQL database with pgvector")
    parser.add_argument("--name", default="transfer", help="results file name")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tsm-bench-transfer-"))
    os.chmod(work, 0o755)  # as root, scripts/postgres runs the server as another user
    server_dir = None
    load_before = os.getloadavg()
    try:
        root = work / "root"
        (root / ".tsm").mkdir(parents=True)
        for suffix in ("", "-wal"):
            if Path(f"{args.db}{suffix}").exists():
                shutil.copy(f"{args.db}{suffix}", root / ".tsm" / f"tsm.db{suffix}")
        base = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
        base |= {
            "TSM_NO_USER_CONFIG": "1",
            "TSM_AUTOSTART": "0",
            "TSM_INDEX_ROOT": str(root),
            "PYTHONPATH": str(ROOT / "src"),
        }
        url = args.url
        if url is None:
            server_dir = work / "pg"
            url = subprocess.run(
                [str(SCRIPT), "start", str(server_dir)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        server = base | {"TSM_STORE_URL": url}
        again = base | {"TSM_DB_PATH": str(work / "again.db")}
        steps: dict[str, dict[str, Any]] = {}
        for name, env, cmd in (
            ("export from SQLite", base, ("export", str(work / "a.tsm.gz"))),
            ("import into PostgreSQL", server, ("import", str(work / "a.tsm.gz"))),
            ("export from PostgreSQL", server, ("export", str(work / "b.tsm.gz"))),
            ("import into SQLite", again, ("import", str(work / "b.tsm.gz"))),
        ):
            took, report = tsm(env, *cmd)
            steps[name] = {"seconds": round(took, 2), "report": report}
            print(f"{name}: {took:.1f} s", flush=True)
        identical = records(work / "a.tsm.gz") == records(work / "b.tsm.gz")
        first = steps["export from SQLite"]["report"]
        result = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "source": str(args.db),
            "documents": first["documents"],
            "chunks": first["chunks"],
            "vectors": first["vectors"],
            "file_bytes": first["bytes"],
            "sqlite_bytes": (root / ".tsm" / "tsm.db").stat().st_size,
            "identical_records": identical,
            "steps": {k: v["seconds"] for k, v in steps.items()},
        }
    finally:
        if server_dir is not None:
            subprocess.run([str(SCRIPT), "stop", str(server_dir)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# tsm export / tsm import (bench/transfer.py)",
        "",
        f"{result['date']}, {result['machine']}, load average before "
        f"{result['load_before']}, after {result['load_after']} (shared machine).",
        "",
        f"Index: {result['documents']} documents, {result['chunks']} chunks, "
        f"{result['vectors']} vectors; SQLite file {result['sqlite_bytes'] / 1e6:.1f} MB, "
        f"export file {result['file_bytes'] / 1e6:.1f} MB (gzip JSON Lines).",
        "",
        "| step | seconds | chunks/s |",
        "|---|---:|---:|",
    ]
    for name, seconds in result["steps"].items():
        lines.append(f"| {name} | {seconds:.1f} | {result['chunks'] / seconds:,.0f} |")
    lines += [
        "",
        "Each step is one `tsm` process (start-up included). Imports rebuild every keyword row "
        "from the stored text with the tokenizer and store the vectors as they are (nothing "
        "re-embedded).",
        "",
        f"PostgreSQL's export equals SQLite's record for record: {result['identical_records']}.",
    ]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not identical:
        raise SystemExit("the two exports differ")


if __name__ == "__main__":
    main()
