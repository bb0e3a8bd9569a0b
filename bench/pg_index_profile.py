#!/usr/bin/env python3
"""Where one PostgreSQL writer's time goes: `tsm index --no-embed` of bench/pg_indexing.py's
corpus into a fresh database, run in this process (the real CLI's main) under cProfile, with
the statements it sends and the times it waits for the server counted.

    python bench/pg_index_profile.py --workdir /tmp/pgidx-work --pg-dir /tmp/pgidx-pg

Reported: wall and this process's CPU seconds; the server's CPU seconds (as
bench/pg_indexing.py reads them); the statements sent, by kind, and the round trips (a
statement outside a pipeline, or a pipeline's sync: each is a wait for the server's answer),
per document written; when the server has pg_stat_statements loaded, its statements by total
execution time; and cProfile's top functions (the whole profile in --prof).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from pg_indexing import load, postmaster_pid, server_cpu  # noqa: E402


def statement_kind(sql: str) -> str:
    """The statement's first words and the table it writes or reads first."""
    text = " ".join(sql.split())
    match = re.match(
        r"(?i)(WITH r AS MATERIALIZED|INSERT INTO \w+|DELETE FROM \w+|UPDATE \w+|SELECT|BEGIN"
        r"|COMMIT|ROLLBACK|SET)",
        text,
    )
    head = match.group(1) if match else text[:30]
    if head.upper() == "SELECT":
        tables = re.findall(r"(?i)\bFROM (\w+)", text)
        head += " " + (tables[0] if tables else text[7:40])
    return head


_DURATION = re.compile(
    r"duration: ([0-9.]+) ms\s+(?:(parse|bind|execute) [^:]*: |statement: )?(.*)"
)


def print_durations(log: Path, offset: int, docs: int) -> None:
    """The server's logged statement durations since `offset`, summed by statement kind and
    protocol phase (parse, bind, execute)."""
    total: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    with log.open(errors="replace") as fh:
        fh.seek(offset)
        for line in fh:
            match = _DURATION.search(line)
            if not match:
                continue
            ms, phase, sql = match.groups()
            key = f"{phase or 'simple'}: {statement_kind(sql)}"
            total[key] += float(ms)
            calls[key] += 1
    print("\nserver-side statement durations (log_min_duration_statement = 0), ms:")
    for key, ms in total.most_common(20):
        print(f"  {ms:10.0f} ms {calls[key]:8d} calls {ms / docs:7.3f} ms/doc  {key}")
    print(f"  {sum(total.values()):10.0f} ms all logged")


def print_tables(url: str, docs: int) -> None:
    """Rows inserted per table, buffer pages touched per index (each index an insert must
    update), their sizes, and the WAL the cluster wrote during the run."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        time.sleep(1)  # statistics reach the views when the backend reports them
        tables = conn.execute(
            """SELECT relname, n_tup_ins, pg_relation_size(relid) FROM pg_stat_user_tables
               WHERE n_tup_ins > 0 ORDER BY n_tup_ins DESC"""
        ).fetchall()
        indexes = conn.execute(
            """SELECT s.relname, s.indexrelname, s.idx_blks_hit + s.idx_blks_read,
                      pg_relation_size(s.indexrelid)
               FROM pg_statio_user_indexes s
               WHERE s.idx_blks_hit + s.idx_blks_read > 0 ORDER BY 3 DESC"""
        ).fetchall()
        wal = conn.execute("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
    print("\nrows inserted per table (per document), heap size:")
    for name, rows, size in tables:
        print(f"  {rows:9d} {rows / docs:8.2f}  {size / 2**20:7.1f} MiB  {name}")
    print("\nbuffer pages touched per index (hits + reads, per document), index size:")
    for table, name, pages, size in indexes:
        print(f"  {pages:9d} {pages / docs:8.1f}  {size / 2**20:7.1f} MiB  {table}.{name}")
    if wal:
        records, fpi, size = wal
        print(
            f"\nWAL during the run (cluster): {records} records, {fpi} full pages, "
            f"{int(size) / 2**20:.0f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, help="bench/pg_indexing.py's --workdir")
    parser.add_argument("--pg-dir", required=True, help="a running scripts/postgres directory")
    parser.add_argument("--prof", default="/tmp/pg_index_profile.prof")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--durations",
        action="store_true",
        help="have the server log every statement's duration, and sum them by kind (the "
        "logging itself costs the server time: a separate run from the timed one)",
    )
    args = parser.parse_args()

    import psycopg

    from tsm.store.postgres import connection as pgc

    url = subprocess.check_output(
        [str(ROOT / "scripts" / "postgres"), "url", args.pg_dir], text=True
    ).strip()
    postmaster = postmaster_pid(Path(args.pg_dir))
    db = f"pgprof_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{db}"')
    db_url = urlunsplit(urlsplit(url)._replace(path=f"/{db}"))
    stats_on = False
    log = Path(args.pg_dir) / "server.log"
    log_from = log.stat().st_size if log.exists() else 0
    if args.durations:  # the server logs each statement's execution time
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{db}" SET log_min_duration_statement = 0')
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_reset_shared('wal')")
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")
            stats_on = True
        except psycopg.Error as exc:
            print(f"pg_stat_statements: not available ({str(exc).strip()})")

    sent: Counter[str] = Counter()
    waits = Counter[str]()
    execute, executemany = pgc.PgConnection.execute, pgc.PgConnection.executemany
    pipelined = pgc.PgConnection.pipelined
    sync = psycopg.Pipeline.sync

    def counted_execute(self, sql, params=None):  # type: ignore[no-untyped-def]
        sent[statement_kind(sql)] += 1
        if self._pipeline is None:
            waits["statement outside a pipeline"] += 1
        return execute(self, sql, params)

    def counted_executemany(self, sql, rows):  # type: ignore[no-untyped-def]
        rows = list(rows)
        if rows:
            sent[statement_kind(sql) + " (executemany)"] += 1
            if self._pipeline is None:
                waits["statement outside a pipeline"] += 1
        return executemany(self, sql, rows)

    def counted_pipelined(self):  # type: ignore[no-untyped-def]
        if self._pipeline is None:
            waits["pipeline end (commit)"] += 1
        return pipelined(self)

    def counted_sync(self):  # type: ignore[no-untyped-def]
        waits["pipeline sync (a result read)"] += 1
        return sync(self)

    pgc.PgConnection.execute = counted_execute  # type: ignore[method-assign]
    pgc.PgConnection.executemany = counted_executemany  # type: ignore[method-assign]
    pgc.PgConnection.pipelined = counted_pipelined  # type: ignore[method-assign]
    psycopg.Pipeline.sync = counted_sync  # type: ignore[method-assign]

    state = Path(tempfile.mkdtemp(prefix="tsm-pgprof-state-"))
    os.environ |= {
        "TSM_INDEX_ROOT": str(Path(args.workdir) / "corpus"),
        "TSM_STATE_DIR": str(state),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
        "TSM_STORE_URL": db_url,
    }
    from tsm.cli.main import main as tsm_main

    before = load()
    srv0 = server_cpu(postmaster)
    cpu0 = time.process_time()
    started = time.perf_counter()
    out = io.StringIO()
    profile = cProfile.Profile()
    with redirect_stdout(out):
        profile.enable()
        code = tsm_main(["index", "--no-embed", "-f", "json"])
        profile.disable()
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    srv = server_cpu(postmaster) - srv0
    report = json.loads(out.getvalue())
    docs = max(int(report["indexed"]), 1)
    print(f"exit {code}; load before {before}, after {load()}")
    print(f"indexed {report['indexed']} documents, {report['chunks']} chunks")
    print(
        f"wall {wall:.1f} s; this process's CPU {cpu:.1f} s (under cProfile); "
        f"server CPU {srv:.1f} s"
    )
    print("\nstatements sent (per document):")
    for kind, n in sent.most_common():
        print(f"  {n:8d} {n / docs:6.2f}  {kind}")
    print(f"  {sum(sent.values()):8d} {sum(sent.values()) / docs:6.2f}  all")
    print("\nround trips (waits for the server, per document):")
    for kind, n in waits.most_common():
        print(f"  {n:8d} {n / docs:6.2f}  {kind}")
    print(f"  {sum(waits.values()):8d} {sum(waits.values()) / docs:6.2f}  all")
    if stats_on:
        with psycopg.connect(db_url, autocommit=True) as conn:
            rows = conn.execute(
                """SELECT calls, round(total_exec_time::numeric, 0),
                          round(total_plan_time::numeric, 0), rows,
                          left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
                   FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database
                                                          WHERE datname = current_database())
                   ORDER BY total_exec_time DESC LIMIT 15"""
            ).fetchall()
        print("\npg_stat_statements (ms, top 15 by execution time; nested statements included):")
        for calls, exec_ms, plan_ms, nrows, query in rows:
            print(
                f"  {calls:7d} calls {exec_ms:>8} ms exec {plan_ms:>6} ms plan "
                f"{nrows:>9} rows  {query}"
            )
    if args.durations:
        print_durations(log, log_from, docs)
    print_tables(db_url, docs)
    profile.dump_stats(args.prof)
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text).strip_dirs()
    stats.sort_stats("tottime").print_stats(args.top)
    print("\ncProfile, by own time:")
    print("\n".join(text.getvalue().splitlines()[6:]))
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
