#!/usr/bin/env python3
"""Whether two builds store the same rows: each indexes the same notes keyword-only (`tsm
index --no-embed`, as bench/index_vs_qmd.py lays them out) into a fresh SQLite index, and
every table tsm writes is digested (bench/pg_indexing.py's digests, plus the FTS5 rows and
the order of the documents' ids).

    python bench/index_rows.py --sets jaquad scifact \\
        --tsm base=/work/wt/base/.venv/bin/tsm --tsm now=.venv/bin/tsm[@ENV=VAL,...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_vs_qmd import layout, load  # noqa: E402
from pg_indexing import DIGESTS, digest  # noqa: E402

SQLITE_DIGESTS = {
    **DIGESTS,
    "chunks_fts": """SELECT d.path, c.chunk_index, f.title, f.section, f.body, f.tags
                     FROM chunks_fts f JOIN chunks c ON c.id = f.rowid
                     JOIN documents d ON d.id = c.document_id ORDER BY 1, 2""",
    "id order": "SELECT path FROM documents ORDER BY id",
}


def rows_of(spec: str, folder: Path, state: Path) -> dict[str, str]:
    binary, _, extra = spec.partition("@")
    shutil.rmtree(state, ignore_errors=True)
    env = {**os.environ, "TSM_INDEX_ROOT": str(folder), "TSM_STATE_DIR": str(state)}
    env.update(dict(kv.split("=", 1) for kv in extra.split(",") if kv))
    subprocess.run(
        [binary, "index", "--no-embed", "-f", "json"],
        cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    conn = sqlite3.connect(state / "tsm.db")
    try:
        return {name: digest(conn.execute(sql).fetchall()) for name, sql in SQLITE_DIGESTS.items()}
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", nargs="+", default=["jaquad", "scifact"])
    parser.add_argument("--tsm", action="append", default=[], help="LABEL=BINARY[@ENV=VAL,...]")
    args = parser.parse_args()
    builds = [tuple(t.split("=", 1)) for t in args.tsm]
    scratch = Path(tempfile.mkdtemp(prefix="index-rows-"))
    same = True
    try:
        for name in args.sets:
            folder = scratch / name
            print(f"## {name}: {layout(name, folder)} notes, load {load()}")
            found = {label: rows_of(spec, folder, scratch / "state") for label, spec in builds}
            for label, rows in found.items():
                print(f"- {label}: " + ", ".join(f"{k} {v}" for k, v in rows.items()))
            identical = len({tuple(r.items()) for r in found.values()}) == 1
            same &= identical
            print(f"identical: {identical}\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
