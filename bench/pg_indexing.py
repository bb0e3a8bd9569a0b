#!/usr/bin/env python3
"""Keyword-only indexing throughput, PostgreSQL against SQLite, one writer: `tsm index
--no-embed` of the same notes into a fresh SQLite file and a fresh PostgreSQL database, for
one or more builds (checkouts), all alternated round by round in one run so that a shared,
loaded machine weighs on each alike.

    python bench/pg_indexing.py --chunks 10000 --rounds 3 \\
        --build base=/work/wt/base-pgidx --build now=. --name pg-indexing-now

The corpus is bench/pg_team_server.py's (the datasets as notes, copied until --chunks: 10,000
is SciFact's 5,183 abstracts, 10,125 chunks). A build is a checkout: its `src` is put first
on PYTHONPATH and run by its own `.venv/bin/python` if it has one, else by this one. The
server is started here by scripts/postgres (fsync on, as SQLite syncs its WAL) unless
--pg-dir names a running one's directory; each PostgreSQL run gets a new database, dropped
after.

Reported per run: wall seconds and chunks/s; the client's CPU seconds (tsm and every process
it waited for: its parsing workers); the server's CPU seconds (the postmaster's exited
children, i.e. the run's backend, plus every live server process's own time: WAL writer,
checkpointer, autovacuum); and a digest of the stored rows (documents, chunks, keyword rows
and postings, tags, links, names, by path and chunk number, ids left out) so that builds are
seen to store the same rows. Results: bench/results/NAME.md and .json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent

TICK = os.sysconf("SC_CLK_TCK")

# The stored rows by natural keys (ids differ between stores and may between builds).
DIGESTS = {
    "documents": """SELECT path, type, title, content_hash, size, category, status, created,
                           updated, doc_date, date_source, aliases, text
                    FROM documents ORDER BY path""",
    "chunks": """SELECT d.path, c.chunk_index, c.section, c.page, c.line, c.chunk_date, c.text,
                        c.embed_hash
                 FROM chunks c JOIN documents d ON d.id = c.document_id
                 ORDER BY d.path, c.chunk_index""",
    "tags": """SELECT d.path, t.tag FROM tags t JOIN documents d ON d.id = t.document_id
               ORDER BY 1, 2""",
    "links": """SELECT d.path, l.target, l.link_type, l.target_key FROM links l
                JOIN documents d ON d.id = l.document_id ORDER BY 1, 2, 3, 4""",
    "names": """SELECT d.path, n.name, n.kind FROM names n JOIN documents d ON d.id = n.document_id
                ORDER BY 1, 2, 3""",
}
PG_DIGESTS = {
    "chunk_keywords": """SELECT d.path, c.chunk_index, k.terms, k.tokens FROM chunk_keywords k
                         JOIN chunks c ON c.id = k.chunk_id JOIN documents d ON d.id = c.document_id
                         ORDER BY 1, 2""",
    # document_id checked against the chunk's own: the path of each
    "keyword_postings": """SELECT p.lexeme, d.path, c.chunk_index, pd.path, p.c0, p.c1, p.c2, p.c3,
                                  p.tokens
                           FROM keyword_postings p JOIN chunks c ON c.id = p.chunk_id
                           JOIN documents d ON d.id = c.document_id
                           JOIN documents pd ON pd.id = p.document_id
                           ORDER BY 1, 2, 3""",
    "keyword_totals": "SELECT sum(rows), sum(tokens) FROM keyword_totals",
    "vector_totals": """SELECT model, dim, sum(chunks) FROM vector_totals GROUP BY model, dim
                        ORDER BY 1, 2""",
}


@dataclass
class Run:
    round: int
    build: str
    store: str
    seconds: float
    chunks: int
    documents: int
    chunks_per_s: float
    client_cpu_s: float
    server_cpu_s: float | None
    load: str
    digest: dict[str, str]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on


def server_cpu(postmaster: int) -> float:
    """CPU seconds of the server so far: the postmaster's own and its exited children's
    (backends are reaped by it), plus every live child's own. A client that just closed
    its connection leaves its backend exiting: read after a pause, once it is reaped."""
    time.sleep(1.0)
    fields = _stat(postmaster)
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = _stat(int(entry.name))
        except (OSError, ValueError):
            continue
        if int(child[1]) == postmaster:  # ppid
            ticks += int(child[11]) + int(child[12])
    return ticks / TICK


def digest(rows: list[tuple[object, ...]]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps([_plain(v) for v in row], ensure_ascii=False).encode())
    return f"{len(rows)}:{h.hexdigest()[:16]}"


def _plain(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if hasattr(value, "__int__") and not isinstance(value, (int, float, str, bool)):
        return int(value)  # Decimal sums
    return value


def sqlite_digest(path: Path) -> dict[str, str]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return {name: digest(conn.execute(sql).fetchall()) for name, sql in DIGESTS.items()}
    finally:
        conn.close()


def pg_digest(url: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {
            name: digest(conn.execute(sql).fetchall())  # type: ignore[arg-type]
            for name, sql in (DIGESTS | PG_DIGESTS).items()
        }


def build_env(build_dir: Path, root: Path, state: Path) -> tuple[str, dict[str, str]]:
    python = build_dir / ".venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {
        "PYTHONPATH": str(build_dir / "src"),
        "TSM_INDEX_ROOT": str(root),
        "TSM_STATE_DIR": str(state),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
    }
    return str(python if python.exists() else sys.executable), env


def index_once(
    python: str, env: dict[str, str], postmaster: int | None
) -> tuple[float, dict[str, object], float, float | None]:
    cpu0 = children_cpu()
    srv0 = server_cpu(postmaster) if postmaster else None
    started = time.perf_counter()
    proc = subprocess.run(
        [python, "-m", "tsm", "index", "--no-embed", "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"tsm index failed ({proc.returncode}): {proc.stderr}")
    srv = server_cpu(postmaster) - srv0 if postmaster and srv0 is not None else None
    return seconds, json.loads(proc.stdout), children_cpu() - cpu0, srv


def start_server(args: argparse.Namespace) -> tuple[str, Path, bool]:
    """(url of database `tsm`, data dir, started here)."""
    script = ROOT / "scripts" / "postgres"
    if args.pg_dir:
        pg_dir = Path(args.pg_dir)
        return (
            subprocess.check_output([str(script), "url", str(pg_dir)], text=True).strip(),
            (pg_dir),
            False,
        )
    pg_dir = Path(tempfile.mkdtemp(prefix="tsm-pgidx-"))
    options = ["--no-fsync"] if args.no_fsync else []
    url = subprocess.check_output([str(script), "start", str(pg_dir), *options], text=True)
    return url.strip(), pg_dir, True


def postmaster_pid(pg_dir: Path) -> int:
    for candidate in (pg_dir / "data" / "postmaster.pid", pg_dir / "postmaster.pid"):
        if candidate.exists():
            return int(candidate.read_text().split()[0])
    found = list(pg_dir.rglob("postmaster.pid"))
    if not found:
        raise SystemExit(f"no postmaster.pid under {pg_dir}")
    return int(found[0].read_text().split()[0])


def markdown(report: dict[str, object], runs: list[Run]) -> str:
    lines = [
        f"# Keyword-only indexing, PostgreSQL against SQLite ({report['date']})",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Corpus: {report['corpus']}; {report['cores']} cores, shared.",
        "",
        "| round | build | store | s | chunks | chunks/s | client CPU s | server CPU s | load |",
        "|---:|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        server = "" if r.server_cpu_s is None else f"{r.server_cpu_s:.1f}"
        lines.append(
            f"| {r.round} | {r.build} | {r.store} | {r.seconds:.1f} | {r.chunks} | "
            f"{r.chunks_per_s:.1f} | {r.client_cpu_s:.1f} | {server} | {r.load} |"
        )
    lines += ["", "PostgreSQL / SQLite chunks/s, same build and round:", ""]
    lines += ["| build | per round | median |", "|---|---|---:|"]
    for build in dict.fromkeys(r.build for r in runs):
        ratios = []
        for n in sorted({r.round for r in runs}):
            by = {r.store: r for r in runs if r.build == build and r.round == n}
            if "sqlite" in by and "postgres" in by:
                ratios.append(by["postgres"].chunks_per_s / by["sqlite"].chunks_per_s)
        if ratios:
            shown = ", ".join(f"{x:.0%}" for x in ratios)
            lines.append(f"| {build} | {shown} | {statistics.median(ratios):.0%} |")
    lines += ["", "Stored rows (count:digest), per build and store (last round):", ""]
    last: dict[tuple[str, str], Run] = {(r.build, r.store): r for r in runs}
    for (build, store), r in last.items():
        lines.append(f"- {build} {store}: " + ", ".join(f"{k} {v}" for k, v in r.digest.items()))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--chunk-chars", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--build", action="append", default=[], help="NAME=CHECKOUT_DIR")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg-dir", help="a running scripts/postgres server's directory")
    parser.add_argument("--no-fsync", action="store_true", help="the server started here")
    parser.add_argument("--workdir", help="keep the corpus here and reuse it")
    parser.add_argument("--name", default="pg-indexing")
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.build] or [["this", str(ROOT)]]
    stores = [s for s in args.stores.split(",") if s]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="tsm-pgidx-work-"))
    root = work / "corpus"
    made = work / "corpus.json"
    if made.exists():
        corpus = json.loads(made.read_text())
    else:
        sys.path.insert(0, str(ROOT / "bench"))  # it puts this checkout's src first
        from pg_team_server import build_corpus

        corpus = build_corpus(root, args.chunks, args.chunk_chars)
        made.write_text(json.dumps(corpus))
    print(f"corpus: {corpus}", flush=True)
    url, pg_dir, started = start_server(args) if "postgres" in stores else ("", Path(), False)
    postmaster = postmaster_pid(pg_dir) if url else None
    runs: list[Run] = []
    try:
        import psycopg

        for n in range(1, args.rounds + 1):
            for name, checkout in builds:
                for store in stores:
                    state = Path(tempfile.mkdtemp(prefix="tsm-pgidx-state-"))
                    python, env = build_env(Path(checkout).resolve(), root, state)
                    env["TSM_CHUNK_CHARS"] = str(args.chunk_chars)
                    db = f"pgidx_{os.getpid()}_{n}_{name}".replace("-", "_")
                    db_url = ""
                    if store == "postgres":
                        with psycopg.connect(url, autocommit=True) as admin:
                            admin.execute(f'CREATE DATABASE "{db}"')
                        db_url = urlunsplit(urlsplit(url)._replace(path=f"/{db}"))
                        env["TSM_STORE_URL"] = db_url
                    before = load()
                    seconds, report, client, server = index_once(
                        python, env, postmaster if store == "postgres" else None
                    )
                    if store == "postgres":
                        rows = pg_digest(db_url)
                        with psycopg.connect(url, autocommit=True) as admin:
                            admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
                    else:
                        rows = sqlite_digest(state / "tsm.db")
                    shutil.rmtree(state, ignore_errors=True)
                    chunks = int(report.get("chunks") or 0)  # type: ignore[call-overload]
                    run = Run(
                        n,
                        name,
                        store,
                        round(seconds, 2),
                        chunks,
                        int(report.get("indexed") or 0),  # type: ignore[call-overload]
                        round(chunks / seconds, 1),
                        round(client, 2),
                        None if server is None else round(server, 2),
                        before,
                        rows,
                    )
                    runs.append(run)
                    print(json.dumps(asdict(run)), flush=True)
    finally:
        if started:
            subprocess.run([str(ROOT / "scripts" / "postgres"), "stop", str(pg_dir)], check=False)
            shutil.rmtree(pg_dir, ignore_errors=True)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    report = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python bench/pg_indexing.py " + " ".join(sys.argv[1:]),
        "corpus": corpus,
        "cores": os.cpu_count(),
        "load_end": load(),
        "runs": [asdict(r) for r in runs],
    }
    out = ROOT / "bench" / "results" / args.name
    out.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    text = markdown(report, runs) + f"\nLoad at the end: {report['load_end']}.\n"
    out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
