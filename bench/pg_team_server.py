"""The team server under load (issue 18 Goals): ~100,000 chunks of real text, `tsm mcp --http`
serving 20 concurrent clients for a fixed time, on PostgreSQL and on SQLite in the same run;
and the indexing throughput of that corpus on each store.

The corpus is the datasets' documents (scifact, scifact-ja, cranfield, jaquad from
../shared/datasets), written as Markdown as bench/retrieval.py does, copied under distinct
paths until the chunk count passes --chunks. Each store indexes it with the real `tsm index`
(timed: documents, chunks, keyword index and vectors). Vectors come from the deterministic
fake embedder at the real model's width (`fake:384`): embedding 100,000 chunks with the real
model takes hours on 2 cores, and a search costs the same matrix product either way; the
query is embedded by the fake too, so the real model's ~10-30 ms per query is not in these
figures.

Then `tsm mcp --http` (a subprocess, bearer token on) serves each store while --clients
threads, each with its own MCP session over plain HTTP (initialize, then `tools/call
search`), send the datasets' queries for --seconds after a warm-up; latency is each call's
wall time at the client. The clients run on the same machine as the server and PostgreSQL.

    .venv/bin/python bench/pg_team_server.py                   # starts its own PostgreSQL
    .venv/bin/python bench/pg_team_server.py --pg-url postgresql://tsm@127.0.0.1:5432/tsm
    .venv/bin/python bench/pg_team_server.py --stores postgres --daemon --seconds 30
    .venv/bin/python bench/pg_team_server.py --chunks 10000 --cli 60   # `tsm search`, warm daemons

With --cli N, the stores are served by their daemons to `tsm search QUERY -f json`, a new
process per search as a user or the prompt hook runs it: both daemons started and warmed,
then N searches per store with the stores alternated query by query (A B, B A, ...), so
the machine's load falls on each alike; latency is the process's wall time, and the
daemon's own `took_ms` beside it.

With --workdir DIR the corpus, the SQLite index and the PostgreSQL database (on --pg-url's
server, its URL kept in DIR/pg-url) are made once and kept there: later runs with the same
DIR only serve, so two checkouts can be timed alternately on the same indexes
(bench/pg_team_server_ab.sh).
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))
from retrieval import DATASETS, read_jsonl, write_corpus  # noqa: E402

CORPORA = ("scifact", "scifact-ja", "cranfield", "jaquad")
TOKEN = "bench-token-" + secrets.token_hex(8)
EMBEDDER = "fake:384"  # the default model's width, so the matrix product costs the same
PROTOCOL = "2025-06-18"
SLOWEST = 10  # the slowest searches of each store, named in the report


# -- the corpus -------------------------------------------------------------------------------
def build_corpus(root: Path, target_chunks: int, chunk_chars: int) -> dict[str, int]:
    """Copies of the datasets under root/copy-N/<dataset>/ until about `target_chunks`
    chunks (estimated with the real chunker; `tsm index` reports the true count)."""
    per_doc: dict[str, list[int]] = {}
    docs = {name: read_jsonl(DATASETS / name / "corpus.jsonl") for name in CORPORA}
    estimate, files, copy = 0, 0, 0
    while estimate < target_chunks:
        for name in CORPORA:
            if estimate >= target_chunks:
                break
            folder = root / f"copy-{copy}" / name
            folder.mkdir(parents=True)
            written = write_corpus(docs[name], folder)
            files += len(written)
            if name not in per_doc:  # chunk counts are the same for every copy
                per_doc[name] = [chunk_count(p, chunk_chars) for p in sorted(folder.iterdir())]
            estimate += sum(per_doc[name])
        copy += 1
    return {"files": files, "copies": copy, "estimated_chunks": estimate}


def chunk_count(path: Path, chunk_chars: int) -> int:
    from tsm.sources.base import SkipFile
    from tsm.sources.markdown import read
    from tsm.text.chunk import chunk_sections

    try:
        return len(chunk_sections(read(path, path.name, path.read_bytes()).sections, chunk_chars))
    except SkipFile:  # an empty document: tsm index skips it too
        return 0


# -- the stores -------------------------------------------------------------------------------
@dataclass
class Store:
    name: str  # sqlite | postgres
    env: dict[str, str]
    index: dict[str, Any] = field(default_factory=dict)
    serving: dict[str, Any] = field(default_factory=dict)


def base_env(root: Path, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    return env | {
        "TSM_INDEX_ROOT": str(root),
        "TSM_STATE_DIR": str(state),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_EMBEDDER": EMBEDDER,
        "TSM_AUTOSTART": "0",
        "TSM_MCP_TOKEN": TOKEN,
    }


@contextmanager
def postgres_database(args: argparse.Namespace) -> Iterator[str]:
    """A new database for the run on --pg-url's server, or on a server started here with
    scripts/postgres (stopped afterwards); dropped at the end unless --keep."""
    import psycopg

    started: Path | None = None
    url = args.pg_url
    if not url:
        started = Path(tempfile.mkdtemp(prefix="tsm-bench-pg-"))
        url = run([str(ROOT / "scripts" / "postgres"), "start", str(started)]).strip()
    name = f"bench_team_{os.getpid()}"
    admin = psycopg.connect(url, autocommit=True)
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        if not args.keep:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        if started is not None:
            run([str(ROOT / "scripts" / "postgres"), "stop", str(started)])
            shutil.rmtree(started, ignore_errors=True)


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 7200) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout


def index_store(store: Store, done: Path | None = None) -> None:
    """`tsm index` of the whole corpus, timed (model load and process start included); with
    `done`, only once: its report is kept there and read back by later runs."""
    if done is not None and done.exists():
        store.index = json.loads(done.read_text()) | {"reused": True}
        print(f"{store.name}: indexed before {json.dumps(store.index)}", flush=True)
        return
    load = os.getloadavg()[0]
    started = time.perf_counter()
    out = run([sys.executable, "-m", "tsm", "index", "-f", "json"], store.env)
    seconds = time.perf_counter() - started
    report = json.loads(out)
    chunks = report.get("chunks") or 0
    store.index = {
        "seconds": round(seconds, 1),
        "documents": report.get("indexed"),
        "chunks": chunks,
        "chunks_per_s": round(chunks / seconds, 1),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    print(f"{store.name}: indexed {json.dumps(store.index)}", flush=True)
    if done is not None:
        done.write_text(json.dumps(store.index))


@contextmanager
def work_directory(workdir: str | None) -> Iterator[Path]:
    if workdir:
        path = Path(workdir)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="tsm-bench-team-") as tmp:
        yield Path(tmp)


def corpus_in(root: Path, args: argparse.Namespace) -> dict[str, int]:
    """The corpus under `root`: built, or read back from a --workdir's earlier run."""
    made = root.parent / "corpus.json"
    if args.workdir and made.exists():
        return dict(json.loads(made.read_text()))
    corpus = build_corpus(root, args.chunks, args.chunk_chars)
    made.write_text(json.dumps(corpus))
    return corpus


@contextmanager
def kept_database(workdir: Path, args: argparse.Namespace) -> Iterator[str]:
    """--workdir's database: made on --pg-url's server on the first run, kept after."""
    import psycopg

    kept = workdir / "pg-url"
    if kept.exists():
        yield kept.read_text().strip()
        return
    if not args.pg_url:
        raise SystemExit("--workdir needs --pg-url: its database outlives the run")
    name = f"bench_team_{os.getpid()}"
    with psycopg.connect(args.pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(args.pg_url)._replace(path=f"/{name}"))
    kept.write_text(url + "\n")
    yield url


# -- an MCP client over plain HTTP ------------------------------------------------------------
class McpSession:
    """One client's MCP session over streamable HTTP: http.client, one keep-alive
    connection, replies read from JSON or from the server's event stream."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.session: str | None = None
        self.ids = 0
        self.call(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "pg_team_server bench", "version": "1"},
            },
        )
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, body: dict[str, Any]) -> tuple[http.client.HTTPResponse, bytes]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
        }
        if self.session:
            headers |= {"Mcp-Session-Id": self.session, "Mcp-Protocol-Version": PROTOCOL}
        self.conn.request("POST", "/mcp", json.dumps(body), headers)
        response = self.conn.getresponse()
        return response, response.read()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        response, raw = self.post(
            {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        )
        if response.status != 200:
            raise RuntimeError(f"{method}: HTTP {response.status}: {raw[:200]!r}")
        self.session = response.getheader("mcp-session-id") or self.session
        text = raw.decode("utf-8")
        if response.getheader("content-type", "").startswith("text/event-stream"):
            data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
            replies = [json.loads(d) for d in data if d]
            reply = next(r for r in replies if r.get("id") == self.ids)
        else:
            reply = json.loads(text)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def search(self, query: str) -> dict[str, Any]:
        result = self.call("tools/call", {"name": "search", "arguments": {"query": query}})
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        data: dict[str, Any] = result["structuredContent"]
        return data

    def close(self) -> None:
        self.conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def mcp_server(env: dict[str, str]) -> Iterator[int]:
    """`tsm mcp --http` on a free port, warmed up (a `status` call queues behind the
    warm-up), stopped afterwards."""
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise SystemExit(f"tsm mcp exited {proc.returncode}: {log.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("tsm mcp did not start listening") from None
                time.sleep(0.2)
        session = McpSession(port)
        session.call("tools/call", {"name": "status", "arguments": {}})
        session.close()
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def load_queries(count: int, seed: int = 5) -> list[str]:
    """The datasets' queries, mixed: as many of each set, English and Japanese."""
    per_set = max(1, count // len(CORPORA))
    queries: list[str] = []
    for name in CORPORA:
        texts = [q["text"] for q in read_jsonl(DATASETS / name / "queries.jsonl")]
        random.Random(seed).shuffle(texts)
        queries += texts[:per_set]
    random.Random(seed).shuffle(queries)
    return queries


def load_test(port: int, clients: int, seconds: float, warmup: float, queries: list[str]):
    """`clients` threads searching for warmup + seconds; calls that start in the timed
    window count. Returns (latencies ms, engine took_ms, errors, window seconds, the query of
    each latency)."""
    latencies: list[float] = []
    took: list[float] = []
    asked: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()
    ready = threading.Barrier(clients + 1)
    start = end = 0.0

    def client(n: int) -> None:
        session = McpSession(port)
        ready.wait()
        i = n * 7
        while True:
            began = time.perf_counter()
            if began >= end:
                break
            query = queries[i % len(queries)]
            i += 1
            try:
                data = session.search(query)
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            ms = (time.perf_counter() - began) * 1000
            if began >= start:
                with lock:
                    latencies.append(ms)
                    took.append(float(data.get("took_ms") or 0))
                    asked.append(query)
        session.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    start = time.perf_counter() + warmup
    end = start + seconds
    ready.wait()
    for t in threads:
        t.join()
    return latencies, took, errors, seconds, asked


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def serve_store(store: Store, args: argparse.Namespace, queries: list[str]) -> None:
    env = store.env | ({"TSM_AUTOSTART": "1"} if args.daemon else {})
    with mcp_server(env) as port:
        load = os.getloadavg()
        latencies, took, errors, seconds, asked = load_test(
            port, args.clients, args.seconds, args.warmup, queries
        )
        after = os.getloadavg()
    if args.daemon:
        subprocess.run(
            [sys.executable, "-m", "tsm", "stop"], env=store.env, capture_output=True, timeout=60
        )
    store.serving = served(args, latencies, took, errors, seconds, load, after, asked)
    print(f"{store.name}: served {json.dumps(store.serving)}", flush=True)


def serve_alternately(stores: list[Store], args: argparse.Namespace, queries: list[str]) -> None:
    """Every store's `tsm mcp --http` running at once, the timed window cut into --slices
    slices served by turns (A B, B A, …), so that the machine's changing load falls on
    each store alike; the first slice of each store has the warm-up, the others one second."""
    got: dict[str, tuple[list[float], list[float], list[str], list[str]]] = {
        s.name: ([], [], [], []) for s in stores
    }
    with ExitStack() as running:
        ports = {s.name: running.enter_context(mcp_server(s.env)) for s in stores}
        load = os.getloadavg()
        for n in range(args.slices):
            shift = (n * 37) % len(queries)  # each slice goes on through the queries
            turn = queries[shift:] + queries[:shift]
            for store in stores if n % 2 == 0 else stores[::-1]:
                warmup = args.warmup if n == 0 else min(1.0, args.warmup)
                latencies, took, errors, _, asked = load_test(
                    ports[store.name], args.clients, args.seconds / args.slices, warmup, turn
                )
                for into, part in zip(
                    got[store.name], (latencies, took, errors, asked), strict=True
                ):
                    into.extend(part)  # type: ignore[attr-defined]
        after = os.getloadavg()
    for store in stores:
        latencies, took, errors, asked = got[store.name]
        store.serving = served(args, latencies, took, errors, args.seconds, load, after, asked)
        print(f"{store.name}: served {json.dumps(store.serving)}", flush=True)


# What users run: the console script next to this Python (else `python -m tsm`).
SCRIPT = Path(sys.executable).with_name("tsm")
TSM = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "tsm"]


def cli_alternately(stores: list[Store], args: argparse.Namespace, queries: list[str]) -> None:
    """`tsm search QUERY -f json` through each store's warm daemon, the stores alternated
    query by query: each search's wall time and its `took_ms`."""
    envs = {s.name: s.env | {"TSM_AUTOSTART": "1"} for s in stores}
    got: dict[str, tuple[list[float], list[float], list[str]]] = {
        s.name: ([], [], []) for s in stores
    }
    try:
        for store in stores:
            run([*TSM, "start"], envs[store.name])
            for query in queries[-10:]:  # warm: the model, the vectors, the statements
                run([*TSM, "search", query, "-f", "json"], envs[store.name])
        load = os.getloadavg()
        started = time.perf_counter()
        for n in range(args.cli):
            for store in stores if n % 2 == 0 else stores[::-1]:
                began = time.perf_counter()
                query = queries[n % len(queries)]
                out = run([*TSM, "search", query, "-f", "json"], envs[store.name])
                wall, took, asked = got[store.name]
                wall.append((time.perf_counter() - began) * 1000)
                took.append(float(json.loads(out)["took_ms"]))
                asked.append(query)
        seconds = time.perf_counter() - started
        after = os.getloadavg()
    finally:
        for store in stores:
            subprocess.run([*TSM, "stop"], env=envs[store.name], capture_output=True, timeout=60)
    for store in stores:
        wall, took, asked = got[store.name]
        store.serving = served(args, wall, took, [], seconds, load, after, asked)
        print(f"{store.name}: served {json.dumps(store.serving)}", flush=True)


def served(
    args: argparse.Namespace,
    latencies: list[float],
    took: list[float],
    errors: list[str],
    seconds: float,
    load: tuple[float, float, float],
    after: tuple[float, float, float],
    asked: list[str],
) -> dict[str, Any]:
    slowest = sorted(zip(latencies, took, asked, strict=True), key=lambda r: -r[0])[:SLOWEST]
    return {
        "clients": 1 if args.cli else args.clients,
        "through_daemon": args.daemon or bool(args.cli),
        "cli": args.cli,
        "slices": args.slices,
        "searches": len(latencies),
        "errors": len(errors),
        "first_errors": errors[:3],
        "per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(percentile(latencies, 0.5), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
        "engine_took_p50_ms": round(percentile(took, 0.5), 1),
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in after],
        "slowest": [{"ms": round(w, 1), "took_ms": t, "query": q} for w, t, q in slowest],
    }


# -- the report -------------------------------------------------------------------------------
def commit() -> str:
    """The commit of the tsm that served: the checkout whose `src` PYTHONPATH names first
    (bench/pg_team_server_ab.sh), else this one."""
    first = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    source = Path(first).parent if first else ROOT
    proc = subprocess.run(
        ["git", "-C", str(source), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip()


def markdown(report: dict[str, Any]) -> str:
    stores = report["stores"]
    lines = [
        f"# Team server under load ({report['date']}, {report['machine']}, "
        f"{report['cores']} cores, commit {report['commit']})",
        "",
        f"Corpus: {report['corpus']['files']} documents of {', '.join(CORPORA)} "
        f"({report['corpus']['copies']} copies under distinct paths); vectors from "
        f"`{EMBEDDER}` (deterministic, the real model's width: the real model's query "
        "embedding, ~10-30 ms, is not included). Clients, server and PostgreSQL share the "
        "machine.",
        "",
        f"Command: `{report['command']}`",
        "",
        "## Indexing (`tsm index`, one process)",
        "",
        *(
            ["Indexed by an earlier run in the same --workdir (with that run's code).", ""]
            if any(s["index"].get("reused") for s in stores)
            else []
        ),
        "| store | documents | chunks | seconds | chunks/s | load avg before → after |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for s in stores:
        i = s["index"]
        if i:
            lines.append(
                f"| {s['name']} | {i['documents']} | {i['chunks']} | {i['seconds']} | "
                f"{i['chunks_per_s']} | {i['load_before']} → {i['load_after']} |"
            )
    by_name = {s["name"]: s for s in stores}
    if all(by_name.get(n, {}).get("index") for n in ("sqlite", "postgres")):
        share = (
            by_name["postgres"]["index"]["chunks_per_s"]
            / by_name["sqlite"]["index"]["chunks_per_s"]
        )
        lines += ["", f"PostgreSQL indexes at {share:.0%} of SQLite's throughput (goal ≥ 50 %)."]
    s0 = next((s["serving"] for s in stores if s["serving"]), None)
    if s0:
        where = "through the daemon" if s0["through_daemon"] else "in the MCP server's process"
        if s0.get("slices"):
            where += f"; the stores served by turns in {s0['slices']} slices"
        title = (
            f"## Search: `tsm search -f json` through a warm daemon, {s0['cli']} searches per "
            "store, the stores alternated query by query"
            if s0.get("cli")
            else f"## Search: `tsm mcp --http`, {s0['clients']} concurrent clients, "
            f"{report['seconds']} s after {report['warmup']} s warm-up ({where})"
        )
        lines += [
            "",
            title,
            "",
            "| store | searches | per s | p50 ms | p95 ms | p99 ms | engine took_ms p50 | "
            "errors | load avg (1, 5, 15 min) before → after |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for s in stores:
            v = s["serving"]
            if v:
                lines.append(
                    f"| {s['name']} | {v['searches']} | {v['per_s']} | {v['p50_ms']} | "
                    f"{v['p95_ms']} | {v['p99_ms']} | {v['engine_took_p50_ms']} | "
                    f"{v['errors']} | {v['load_before']} → {v['load_after']} |"
                )
        pg, lite = (
            by_name.get("postgres", {}).get("serving"),
            by_name.get("sqlite", {}).get("serving"),
        )
        if pg and lite:
            lines += [
                "",
                f"PostgreSQL p50 / SQLite p50: {pg['p50_ms'] / lite['p50_ms']:.2f}× end to end, "
                f"{pg['engine_took_p50_ms'] / lite['engine_took_p50_ms']:.2f}× in the daemon "
                "(goal ≤ 1.5×).",
            ]
        for s in stores:
            slow = s["serving"].get("slowest") if s["serving"] else None
            if slow:
                lines += [
                    "",
                    f"The {len(slow)} slowest searches on {s['name']}:",
                    "",
                    "| ms | engine took_ms | query |",
                    "|---:|---:|---|",
                    *(
                        f"| {r['ms']} | {r['took_ms']} | {r['query'][:90].replace('|', '/')} |"
                        for r in slow
                    ),
                ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000, help="corpus size in chunks")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0, help="timed window per store")
    parser.add_argument("--warmup", type=float, default=10.0, help="untimed seconds before")
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--pg-url", help="a PostgreSQL server (default: start one here)")
    parser.add_argument("--daemon", action="store_true", help="serve through tsm's daemon")
    parser.add_argument(
        "--cli",
        type=int,
        default=0,
        help="instead of MCP clients: this many `tsm search` processes per store through "
        "its warm daemon, the stores alternated",
    )
    parser.add_argument("--chunk-chars", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "pg_team_server"))
    parser.add_argument("--workdir", help="keep the corpus and the indexes here, and reuse them")
    parser.add_argument(
        "--slices",
        type=int,
        default=0,
        help="serve every store at once, their turns alternated over this many slices of "
        "the timed window (default 0: one store after the other)",
    )
    args = parser.parse_args()
    if args.slices and args.daemon:
        parser.error("--slices serves the stores in this process's MCP servers, not a daemon")
    if args.slices and args.cli:
        parser.error("--cli alternates the stores search by search; --slices is for MCP clients")
    names = [n for n in args.stores.split(",") if n]
    queries = load_queries(400)
    with work_directory(args.workdir) as tmp:
        root = tmp / "corpus"
        corpus = corpus_in(root, args)
        print(f"corpus: {corpus}", flush=True)
        stores: list[Store] = []
        database: AbstractContextManager[str | None] = nullcontext(None)
        if "postgres" in names:
            database = kept_database(tmp, args) if args.workdir else postgres_database(args)
        with database as url:
            for name in names:
                env = base_env(root, tmp / f"state-{name}")
                env["TSM_CHUNK_CHARS"] = str(args.chunk_chars)
                if name == "postgres":
                    assert url is not None
                    env["TSM_STORE_URL"] = url
                store = Store(name, env)
                index_store(store, tmp / f"indexed-{name}.json" if args.workdir else None)
                if not args.slices and not args.cli:
                    serve_store(store, args, queries)
                stores.append(store)
            if args.cli:
                cli_alternately(stores, args, queries)
            elif args.slices:
                serve_alternately(stores, args, queries)
    report = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "commit": commit(),
        "command": "python bench/pg_team_server.py " + " ".join(sys.argv[1:]),
        "corpus": corpus,
        "seconds": args.seconds,
        "warmup": args.warmup,
        "stores": [{"name": s.name, "index": s.index, "serving": s.serving} for s in stores],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
