"""What FTS5's segments cost a search: the same statements on an index as `tsm index` left it
and on a copy merged into one segment (FTS5's `optimize`), alternated in one process.

    .venv/bin/python bench/fts_segments.py /tmp/sqs/b10k/.tsm/tsm.db

Times, for bench/daemon_latency.py's queries (as the search quotes their terms), the
statement that reads a page's passages with its term coverage (store/hits.hit_rows with
store/sqlite/keywords.chunk_condition: one FTS5 point test per chunk and term) for the
query's top 10 chunks, and the keyword ranking with its match ids (store/sqlite/
keywords.best_chunks and matching_chunk_ids): the searching thread's CPU, median.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from tsm.store.sqlite.keywords import chunk_condition  # noqa: E402

QUERIES = [
    ["install", "git", "ubuntu"],
    ["sqlite", "write", "ahead", "log"],
    ["kubernetes", "deployment", "rollback"],
    ["lora", "radio", "range", "test"],
]
RANKING = """SELECT f.rowid, c.document_id, f.rank FROM (
    SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?
    AND rank MATCH 'bm25(2.0, 1.5, 1.0, 2.0)' ORDER BY rank LIMIT 300) f
    JOIN chunks c ON c.id = f.rowid ORDER BY f.rank, c.document_id"""
MATCHES = "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?"


def segments(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def timed(conn: sqlite3.Connection, statements: list[tuple[str, list[object]]]) -> float:
    """The searching thread's CPU, in ms, to run and fetch these statements."""
    started = time.thread_time()
    for sql, params in statements:
        conn.execute(sql, params).fetchall()
    return (time.thread_time() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path, help="an index as `tsm index` left it")
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tsmseg", dir="/tmp"))
    try:
        merged_path = folder / "merged.db"
        shutil.copy(args.db, merged_path)
        merged = sqlite3.connect(merged_path)
        started = time.process_time()
        merged.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
        merge_cpu = time.process_time() - started
        as_left = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        sides = {"as left": as_left, "merged": merged}
        print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(
            f"segments: as left {segments(as_left)}, merged {segments(merged)}; "
            f"the merge took {merge_cpu:.2f} s of CPU\n"
        )
        print("| query | page coverage, as left / merged | ranking + ids, as left / merged |")
        print("|---|---|---|")
        for terms in QUERIES:
            expression = " OR ".join(f'"{t}"' for t in terms)
            top = [
                r[0]
                for r in as_left.execute(
                    "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rank MATCH "
                    "'bm25(2.0, 1.5, 1.0, 2.0)' ORDER BY rank LIMIT 10",
                    (expression,),
                )
            ]
            tests = [chunk_condition(f'"{t}"') for t in terms]
            page = (
                "SELECT c.id, c.text"
                + "".join(f", {sql}" for sql, _ in tests)
                + f" FROM chunks c WHERE c.id IN ({','.join('?' * len(top))})"
            )
            params = [p for _, ps in tests for p in ps] + top
            coverage: dict[str, list[float]] = {name: [] for name in sides}
            ranking: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(args.repeat):
                for name, conn in sides.items():
                    coverage[name].append(timed(conn, [(page, params)]))
                    ranking[name].append(
                        timed(conn, [(RANKING, [expression]), (MATCHES, [expression])])
                    )
            med = {
                n: (statistics.median(coverage[n]), statistics.median(ranking[n])) for n in sides
            }
            print(
                f"| {' '.join(terms)} | {med['as left'][0]:.3f} / {med['merged'][0]:.3f} ms | "
                f"{med['as left'][1]:.2f} / {med['merged'][1]:.2f} ms |"
            )
        print(f"\nload {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
