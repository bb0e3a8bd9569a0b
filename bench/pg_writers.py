"""Many writers on one PostgreSQL store: two and four `tsm index` processes at once on
overlapping parts of a real corpus (scifact abstracts written as Markdown notes), against
one writer on PostgreSQL and one on SQLite over the same files, in the same run.

    .venv/bin/python bench/pg_writers.py                        # 3,000 notes, 1/2/4 writers
    .venv/bin/python bench/pg_writers.py --docs 5183 --writers 2,4 --url postgresql://...

The corpus is cut into one share per writer; writer i indexes its share and the first half
of the next one (wrapping), so half of every share is written by two writers at once, who
meet on it. Every run starts from an empty index (a new database; a new SQLite file) and
runs `tsm index --no-embed` as a subprocess (so the times include each process's start,
~1 s): embedding costs the same on both stores and is measured elsewhere
(bench/retrieval.py, bench/embed_speed.py). Checks after each multi-writer run: every
writer exits 0 with nothing on stderr; the store holds exactly one document per file, with
the file's SHA-256; each file was written once (the writers' `indexed` add up to the number
of files; the rest they found already stored); and the documents, chunks, keyword rows,
tags, links and names equal, row for row, those one writer alone stored.

Without --url a server is started by scripts/postgres in a temp dir (fsync on, as SQLite
syncs its WAL) and stopped after. `--delay-ms D` puts the server "on the network": the
writers reach it through bench/delay_proxy.py, which delays every byte by D ms each way
(a round trip 2 x D longer; the checks read the server directly). Results:
bench/results/pg_writers.md and .json, with the load average before and after (the machine
is shared).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SCRIPT = ROOT / "scripts" / "postgres"
CORPUS = ROOT.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"
if not CORPUS.exists():
    CORPUS = Path("/work/shared/datasets/scifact/corpus.jsonl")


@dataclass
class Run:
    store: str  # sqlite | postgres
    writers: int
    seconds: float  # wall time, first start to last exit
    documents: int  # stored at the end
    chunks: int
    docs_per_s: float
    writes: int  # documents written, over all writers (each file once: == documents)
    found_stored: int  # files a writer found already stored by another one
    checks: str  # "ok", or what failed


def write_corpus(root: Path, count: int, shares: int) -> list[Path]:
    """`count` scifact abstracts as notes, dealt into `shares` folders."""
    files = []
    with CORPUS.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if n == count:
                break
            record = json.loads(line)
            folder = root / "scifact" / f"part-{n % shares:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            title = record["title"].replace('"', "'")
            path = folder / f"{record['_id']}.md"
            path.write_text(
                f'---\ntitle: "{title}"\ntags: [scifact]\n---\n# {record["title"]}\n\n'
                f"{record['text']}\n",
                encoding="utf-8",
            )
            files.append(path)
    return files


def windows(shares: int, writers: int) -> list[list[str]]:
    """Each writer's folders: its own share of them, then the first half of the next
    writer's share (wrapping)."""
    per = shares // writers
    out = []
    for i in range(writers):
        own = [f"scifact/part-{(i * per + k) % shares:02d}" for k in range(per)]
        nxt = [f"scifact/part-{((i + 1) * per + k) % shares:02d}" for k in range(per // 2)]
        out.append(own + nxt)
    return out


def tsm_env(root: Path, url: str | None, state: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "TSM_INDEX_ROOT": str(root),
        "TSM_STATE_DIR": str(state),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
    }
    env.pop("TSM_STORE_URL", None)
    if url:
        env["TSM_STORE_URL"] = url
    return env


def run_writers(env: dict[str, str], targets: list[list[str]]) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json", *t],
            env=env,
            cwd=env["TSM_INDEX_ROOT"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for t in targets
    ]
    outputs = [p.communicate() for p in procs]
    seconds = time.perf_counter() - started
    results = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        results.append((proc.returncode, out, err))
    return seconds, results


def pg_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """What the store holds per document, keyed by path (ids differ between stores)."""
    import psycopg

    queries = {
        "documents": """SELECT path, type, title, content_hash, size, mtime, category, status,
                               created, updated, doc_date, date_source, aliases, text
                        FROM documents""",
        "chunks": """SELECT d.path, c.chunk_index, c.section, c.page, c.line, c.chunk_date,
                            c.text, c.embed_hash
                     FROM chunks c JOIN documents d ON d.id = c.document_id""",
        "keywords": """SELECT d.path, c.chunk_index, k.lexemes::text, k.counts::text,
                              k.positions::text, k.tokens
                       FROM chunk_keywords k JOIN chunks c ON c.id = k.chunk_id
                       JOIN documents d ON d.id = c.document_id""",
        "tags": "SELECT d.path, t.tag FROM tags t JOIN documents d ON d.id = t.document_id",
        "links": """SELECT d.path, l.target, l.link_type, l.target_key
                    FROM links l JOIN documents d ON d.id = l.document_id""",
        "names": """SELECT d.path, n.name, n.kind
                    FROM names n JOIN documents d ON d.id = n.document_id""",
    }
    with psycopg.connect(url) as conn:
        return {name: sorted(conn.execute(sql).fetchall()) for name, sql in queries.items()}


def sqlite_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The documents and chunks of an SQLite index, as pg_rows gives them."""
    conn = sqlite3.connect(db)
    try:
        docs = conn.execute(
            """SELECT path, type, title, content_hash, size, mtime, category, status, created,
                      updated, doc_date, date_source, aliases, text FROM documents"""
        ).fetchall()
        chunks = conn.execute(
            """SELECT d.path, c.chunk_index, c.section, c.page, c.line, c.chunk_date, c.text,
                      c.embed_hash FROM chunks c JOIN documents d ON d.id = c.document_id"""
        ).fetchall()
    finally:
        conn.close()
    return {"documents": sorted(docs), "chunks": sorted(chunks)}


def check(
    results: list[Any], rows: dict[str, list[Any]], files: dict[str, str], reference: Any
) -> tuple[str, int, int]:
    """("ok" or what is wrong, documents written, files found already stored)."""
    problems = []
    reports = []
    for code, out, err in results:
        if code != 0 or err.strip():
            problems.append(f"a writer exited {code}: {err.strip()[:300]}")
        else:
            reports.append(json.loads(out))
    writes = sum(r["indexed"] for r in reports)
    found = sum(r["unchanged"] for r in reports)
    stored = {d[0]: d[3] for d in rows["documents"]}
    if stored != files:
        missing, extra = set(files) - set(stored), set(stored) - set(files)
        wrong = [p for p in files if p in stored and stored[p] != files[p]]
        problems.append(f"{len(missing)} missing, {len(extra)} extra, {len(wrong)} wrong hashes")
    if not problems and writes != len(files):
        problems.append(f"{writes} documents written for {len(files)} files")
    if reference is not None:
        for table, want in reference.items():
            if rows.get(table) != want:
                problems.append(f"{table} differ from one writer's")
    return ("ok" if not problems else "; ".join(problems)), writes, found


@contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    directory = Path(tempfile.mkdtemp(prefix="tsm-bench-pg-writers-"))
    try:
        started = subprocess.run(
            [str(SCRIPT), "start", str(directory)], capture_output=True, text=True, check=True
        )
        yield started.stdout.strip()
    finally:
        subprocess.run([str(SCRIPT), "stop", str(directory)], check=False)
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def delayed(base: str, delay_ms: float) -> Iterator[Callable[[str], str]]:
    """A function giving the URL by which the writers reach a database of the server at
    `base`: through bench/delay_proxy.py when `delay_ms` is set, else the URL itself."""
    if not delay_ms:
        yield lambda url: url
        return
    parts = urlsplit(base)
    proxy = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "delay_proxy.py"), "--to",
         f"{parts.hostname}:{parts.port}", "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proxy.stdout is not None
        port = int(proxy.stdout.readline())
        netloc = parts.netloc.rsplit(":", 1)[0] + f":{port}"
        yield lambda url: urlunsplit(urlsplit(url)._replace(netloc=netloc))
    finally:
        proxy.kill()
        proxy.wait()


@contextmanager
def database(base: str, name: str) -> Iterator[str]:
    import psycopg

    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(urlunsplit(parts._replace(path=f"/{name}"))) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.commit()
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=3000, help="scifact abstracts to index")
    parser.add_argument("--writers", default="2,4", help="writer counts of the multi runs")
    parser.add_argument("--url", help="a PostgreSQL server (databases are made and dropped)")
    parser.add_argument("--name", default="pg_writers", help="results file name")
    parser.add_argument(
        "--delay-ms", type=float, default=0.0, help="added each way between writers and server"
    )
    args = parser.parse_args()
    counts = [int(w) for w in args.writers.split(",")]
    # Folders: a multiple of every writer count, two or more per writer (half of a share
    # must be a whole number of folders).
    shares = 2 * math.lcm(*counts)
    load_before = os.getloadavg()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="tsm-bench-pg-writers-") as tmp:
        root = Path(tmp) / "repo"
        paths = write_corpus(root, args.docs, shares)
        files = {
            p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in paths
        }
        everything = [["scifact"]]

        state = Path(tmp) / "sqlite-state"
        seconds, results = run_writers(tsm_env(root, None, state), everything)
        lite = sqlite_rows(state / "tsm.db")
        verdict, writes, found = check(results, lite, files, None)
        runs.append(
            Run(
                "sqlite",
                1,
                seconds,
                len(lite["documents"]),
                len(lite["chunks"]),
                len(files) / seconds,
                writes,
                found,
                verdict,
            )
        )
        print(runs[-1], flush=True)
        with server(args.url) as base, delayed(base, args.delay_ms) as reach:
            version = pg_version(base)
            with database(base, "tsm_bench_writers_1") as url:
                seconds, results = run_writers(
                    tsm_env(root, reach(url), Path(tmp) / "s1"), everything
                )
                reference = pg_rows(url)
            verdict, writes, found = check(results, reference, files, None)
            same = {t: reference[t] for t in lite} == lite
            runs.append(
                Run(
                    "postgres",
                    1,
                    seconds,
                    len(reference["documents"]),
                    len(reference["chunks"]),
                    len(files) / seconds,
                    writes,
                    found,
                    verdict + ("" if same else "; documents/chunks differ from SQLite's"),
                )
            )
            print(runs[-1], flush=True)
            for count in counts:
                with database(base, f"tsm_bench_writers_{count}") as url:
                    seconds, results = run_writers(
                        tsm_env(root, reach(url), Path(tmp) / f"s{count}"),
                        windows(shares, count),
                    )
                    rows = pg_rows(url)
                verdict, writes, found = check(results, rows, files, reference)
                runs.append(
                    Run(
                        "postgres",
                        count,
                        seconds,
                        len(rows["documents"]),
                        len(rows["chunks"]),
                        len(files) / seconds,
                        writes,
                        found,
                        verdict,
                    )
                )
                print(runs[-1], flush=True)
    load_after = os.getloadavg()
    report(args, runs, version, load_before, load_after)


def report(
    args: argparse.Namespace,
    runs: list[Run],
    version: str,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> None:
    RESULTS.mkdir(exist_ok=True)
    when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    meta = {
        "when": when,
        "docs": args.docs,
        "postgres": version,
        "server": "your --url" if args.url else "scripts/postgres, fsync on",
        "delay_ms": args.delay_ms,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": load_before,
        "load_after": load_after,
    }
    (RESULTS / f"{args.name}.json").write_text(
        json.dumps({**meta, "runs": [asdict(r) for r in runs]}, indent=2) + "\n"
    )
    sqlite = next(r for r in runs if r.store == "sqlite")
    lines = [
        f"# Many writers on PostgreSQL ({args.name})",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/pg_writers.py', *sys.argv[1:]])}` at {when}: "
        f"{args.docs} scifact abstracts as Markdown notes, `tsm index --no-embed` per writer "
        f"(process start included), PostgreSQL {version} ({meta['server']}"
        + (f", reached through a proxy adding {args.delay_ms} ms each way" if args.delay_ms else "")
        + "), "
        f"{meta['cpus']} CPUs shared with other work: load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after.",
        "",
        "| store | writers | wall s | docs/s | vs SQLite | documents | chunks | written "
        "| found stored | checks |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r.store} | {r.writers} | {r.seconds:.1f} | {r.docs_per_s:.0f} | "
            f"{r.docs_per_s / sqlite.docs_per_s:.0%} | {r.documents} | {r.chunks} | {r.writes} "
            f"| {r.found_stored} | {r.checks} |"
        )
    lines += [
        "",
        "Writers: writer i indexes its share of the corpus and the first half of the next "
        "share, so half of every share is written by two writers at once. `written` adds up "
        "the writers' `indexed`: each file is written once, the other writer finds it stored "
        "(`found stored`). Checks: exit 0 and empty stderr for every writer; one document per "
        "file with the file's SHA-256; the documents, chunks, keyword rows, tags, links and "
        "names equal row for row those one PostgreSQL writer stored (and its documents and "
        "chunks equal SQLite's).",
        "",
    ]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
