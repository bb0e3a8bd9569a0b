"""What the sweep of unused vectors costs after an edit (vectors.drop_orphans, run at the end
of every embedding run: each `tsm index` with a model, each daemon backfill): the statement
of before (every vector checked against every chunk) against the sweep of the hashes chunks
let go of (migration m012), on an index of N chunks with a 384-dimension vector each, after
one note of 3 chunks was rewritten. Alternated, CPU and wall per sweep, both engines.

    python bench/vector_sweep.py --chunks 10000 100000
    python bench/vector_sweep.py --chunks 100000 --pg-url "$(scripts/postgres url DIR)"
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tsm.store import migrations, vectors  # noqa: E402
from tsm.store.connect import Transaction, open_db  # noqa: E402
from tsm.store.engine import store_of  # noqa: E402

DIM = 384
CHUNKS_PER_NOTE = 3
FULL_SCAN = "DELETE FROM embeddings WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)"


def fill(conn: Any, chunks: int) -> None:
    """`chunks` chunks in notes of 3, each text with a stored vector, written in bulk."""
    vector = np.ones(DIM, dtype=np.float32)
    for start in range(0, chunks, 30_000):
        with Transaction(conn):
            for n in range(
                start // CHUNKS_PER_NOTE, min(chunks, start + 30_000) // CHUNKS_PER_NOTE
            ):
                (doc,) = conn.execute(
                    """INSERT INTO documents(path, type, title, content_hash, size, mtime,
                       category, text, indexed_at) VALUES (?, 'markdown', ?, ?, 1, 0, 'note',
                       'x', 0) RETURNING id""",
                    (f"n{n}.md", f"n{n}", f"n{n}"),
                ).fetchone()
                for i in range(CHUNKS_PER_NOTE):
                    conn.execute(
                        """INSERT INTO chunks(document_id, chunk_index, section, text,
                           embed_hash) VALUES (?, ?, '', 'x', ?)""",
                        (doc, i, f"n{n}-{i}"),
                    )
            last = min(chunks, start + 30_000) // CHUNKS_PER_NOTE
            hashes = [f"n{n}-{i}" for n in range(start // CHUNKS_PER_NOTE, last)
                      for i in range(CHUNKS_PER_NOTE)]  # fmt: skip
            vectors.store(conn, "m", [(h, vector) for h in hashes])
    with Transaction(conn):  # the stored texts are released too (vectors.store): swept once
        vectors.drop_orphans(conn)


def edit(conn: Any, n: int) -> None:
    """Note n rewritten: its chunks replaced by chunks of new texts, their vectors stored."""
    with Transaction(conn):
        (doc,) = conn.execute("SELECT id FROM documents WHERE path = ?", (f"n{n}.md",)).fetchone()
        conn.execute("DELETE FROM chunks WHERE document_id = ?", (doc,))
        for i in range(CHUNKS_PER_NOTE):
            conn.execute(
                """INSERT INTO chunks(document_id, chunk_index, section, text, embed_hash)
                   VALUES (?, ?, '', 'x', ?)""",
                (doc, i, f"n{n}-{i}-edited"),
            )
        vectors.store(conn, "m", [(f"n{n}-{i}-edited", np.ones(DIM, np.float32)) for i in range(3)])


def timed(conn: Any, sweep: Any) -> tuple[float, float, int]:
    cpu, wall = time.process_time(), time.perf_counter()
    with Transaction(conn):
        dropped = sweep(conn)
    return time.process_time() - cpu, time.perf_counter() - wall, dropped


def full_scan(conn: Any) -> int:
    """vectors.drop_orphans as it was before m012."""
    vectors.documents.exclude_writers(conn)
    dropped = int(conn.execute(FULL_SCAN).rowcount)
    if dropped:
        store_of(conn).vectors.after_delete(conn)
    return dropped


def compare(conn: Any, label: str, chunks: int, rounds: int) -> None:
    results: dict[str, list[tuple[float, float, int]]] = {"before": [], "now": []}
    load = os.getloadavg()[0]
    for r in range(rounds):
        order = [("before", full_scan), ("now", vectors.drop_orphans)]
        for name, sweep in order if r % 2 == 0 else order[::-1]:
            edit(conn, r * 2 + (name == "now"))
            results[name].append(timed(conn, sweep))
    server = "" if label == "sqlite" else " (client CPU only: the server's is not counted)"
    print(f"## {label}, {chunks:,} chunks, {rounds} edits each, load {load:.2f} -> "
          f"{os.getloadavg()[0]:.2f}{server}")  # fmt: skip
    for name, rows in results.items():
        cpu = statistics.median(r[0] for r in rows) * 1000
        wall = statistics.median(r[1] for r in rows) * 1000
        dropped = sorted({r[2] for r in rows})
        print(f"{name:>7}: median wall {wall:8.2f} ms, CPU {cpu:8.2f} ms, dropped {dropped}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--pg-url", help="also on this server (a database per size is made)")
    args = parser.parse_args()
    for chunks in args.chunks:
        with tempfile.TemporaryDirectory() as tmp:
            conn = open_db(Path(tmp) / "tsm.db", create=True)
            fill(conn, chunks)
            compare(conn, "sqlite", chunks, args.rounds)
            conn.close()
        if args.pg_url:
            import psycopg

            from tsm.store.postgres import connection as postgres

            name = f"bench_sweep_{os.getpid()}_{chunks}"
            with psycopg.connect(args.pg_url, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name}")
            try:
                url = urlunsplit(urlsplit(args.pg_url)._replace(path=f"/{name}"))
                conn = postgres.connect(url)
                migrations.apply(conn)
                fill(conn, chunks)
                conn.execute("VACUUM ANALYZE")
                compare(conn, "postgresql", chunks, args.rounds)
                conn.close()
            finally:
                with psycopg.connect(args.pg_url, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


if __name__ == "__main__":
    main()
