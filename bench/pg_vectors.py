"""Vectors on PostgreSQL at 10k, 100k and 1M chunks: the exact path (the matrix in the
searcher's memory, search/vector.py VectorIndex) against the HNSW path (AnnIndex, pgvector's
index), through the same code a search runs (`load_index`, `.match`).

For each size: database size, HNSW build time (after a bulk load; cosine, and inner product
at the smaller sizes), the exact path's load time and RSS, search latency p50/p95 of both
paths, HNSW recall@10 (the exact path's 10 best documents found by HNSW), the cost of a
store() batch with the index in place, and at 100k the matrix load from pgvector's binary
form against BYTEA.

Vectors: realistic, not random. Random unit vectors in 384 dimensions have no structure and
are HNSW's worst case (recall@10 0.15-0.3 at 100k in a first try). Rows are the cached
multilingual-e5-small document vectors of bench/retrieval.py (bench/.cache/vectors.sqlite,
13,676 of them) each plus Gaussian noise with the same covariance (scaled by --noise),
normalised; queries are the cache's 4,676 real query vectors.

    scripts/postgres start /tmp/pgbench --no-fsync
    python bench/pg_vectors.py --url "$(scripts/postgres url /tmp/pgbench)" \\
        --sizes 10000,100000,1000000 --out bench/results/pg_vectors.md
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI and daemon set it

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tsm.search import vector  # noqa: E402
from tsm.store import migrations, vectors  # noqa: E402
from tsm.store.connect import Transaction  # noqa: E402
from tsm.store.postgres import connection as postgres  # noqa: E402
from tsm.store.postgres import vectors as pg_vectors  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache" / "vectors.sqlite"
MODEL = "multilingual-e5-small-q4"
CHUNKS_PER_DOC = 4
DEPTH = 50  # the vector side's depth for a top-10 search (engine: max(candidates, 3 * top_k))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def real_vectors() -> tuple[np.ndarray, np.ndarray]:
    if not CACHE.exists():
        sys.exit(f"{CACHE} is missing: run bench/retrieval.py once (it caches the vectors)")
    db = sqlite3.connect(CACHE)
    docs = [r[0] for r in db.execute("SELECT vector FROM embeddings WHERE model = ?", (MODEL,))]
    queries = [r[0] for r in db.execute("SELECT vector FROM queries WHERE model = ?", (MODEL,))]
    as_matrix = lambda rows: np.frombuffer(b"".join(rows), np.float32).reshape(len(rows), -1)  # noqa: E731
    return as_matrix(docs), as_matrix(queries)


def synthetic(real: np.ndarray, rows: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centred = real - real.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    scale = (s / np.sqrt(len(real) - 1)) * noise  # per principal axis
    out = np.empty((rows, real.shape[1]), np.float32)
    for start in range(0, rows, 100_000):
        n = min(100_000, rows - start)
        base = real[rng.integers(0, len(real), n)]
        eps = (rng.standard_normal((n, len(s))).astype(np.float32) * scale) @ vt
        block = base + eps
        out[start : start + n] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def database_url(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    return database_url(url, name)


def bulk_load(conn: postgres.PgConnection, matrix: np.ndarray) -> float:
    """Documents, chunks and vectors by COPY (the change log's triggers fire as for any
    write); returns the seconds taken. No HNSW index yet: it is built after, as a bulk
    import would."""
    raw = pg_vectors._adapt(conn)
    rows = matrix.shape[0]
    started = time.perf_counter()
    with raw.transaction(), raw.cursor() as cur:
        with cur.copy(
            "COPY documents (id, path, type, title, content_hash, size, mtime, category, text, "
            "indexed_at) FROM STDIN"
        ) as cp:
            for d in range(1, rows // CHUNKS_PER_DOC + 2):
                cp.write_row(
                    (d, f"n/{d}.md", "markdown", f"Note {d}", f"h{d}", 1, 1.0, "n", "", 1.0)
                )
        with cur.copy(
            "COPY chunks (id, document_id, chunk_index, section, text, embed_hash) FROM STDIN"
        ) as cp:
            for c in range(rows):
                cp.write_row((c + 1, c // CHUNKS_PER_DOC + 1, c % CHUNKS_PER_DOC, "", "", f"e{c}"))
        oid = raw.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
        with cur.copy(
            "COPY embeddings (model, embed_hash, dim, vector) FROM STDIN (FORMAT BINARY)"
        ) as cp:
            cp.set_types(["text", "text", "int4", oid])
            for c in range(rows):
                cp.write_row((MODEL, f"e{c}", matrix.shape[1], pg_vectors.PgVector(matrix[c])))
        raw.execute(
            "SELECT setval(pg_get_serial_sequence('documents', 'id'), max(id)) FROM documents"
        )
        raw.execute("SELECT setval(pg_get_serial_sequence('chunks', 'id'), max(id)) FROM chunks")
    raw.execute("VACUUM ANALYZE embeddings")
    raw.execute("VACUUM ANALYZE chunks")
    return time.perf_counter() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[int(share * (len(ordered) - 1))]


def top_docs(ranked: list[tuple[int, int, float]], k: int = 10) -> list[int]:
    return [d for _, d, _ in ranked[:k]]


def run_size(
    url: str, rows: int, real: np.ndarray, queries: np.ndarray, args: argparse.Namespace
) -> dict[str, object]:
    out: dict[str, object] = {"rows": rows}
    matrix = synthetic(real, rows, args.noise, seed=rows)
    db_url = fresh_database(url, f"bench_vectors_{rows}")
    conn = postgres.connect(db_url)
    migrations.apply(conn)
    out["load_s"] = bulk_load(conn, matrix)
    dim = matrix.shape[1]
    with Transaction(conn):
        started = time.perf_counter()
        pg_vectors.ensure_hnsw(conn, MODEL, dim, memory=args.build_memory)
    out["build_s"] = time.perf_counter() - started
    (out["db_mb"],) = conn.execute(
        "SELECT pg_database_size(current_database()) / 1e6::float8"
    ).fetchone()
    (out["hnsw_mb"],) = conn.execute(
        "SELECT pg_relation_size(?) / 1e6::float8", (pg_vectors.index_name(MODEL, dim),)
    ).fetchone()
    (out["table_mb"],) = conn.execute(
        "SELECT pg_total_relation_size('embeddings') / 1e6::float8"
    ).fetchone()
    del matrix

    picked = queries[: args.queries]
    # The exact path: load the matrix (as a searcher's first query does), then search.
    vector._cache.clear()
    before = rss_mb()
    started = time.perf_counter()
    exact = vector._loaded(conn, MODEL, dim)
    out["exact_load_s"] = time.perf_counter() - started
    out["exact_rss_mb"] = rss_mb() - before
    exact_lat, truth = [], []
    for q in picked:
        started = time.perf_counter()
        found = exact.match(conn, q, DEPTH)
        exact_lat.append((time.perf_counter() - started) * 1000)
        truth.append(top_docs(found.ranked))
    out["exact_p50"], out["exact_p95"] = percentile(exact_lat, 0.5), percentile(exact_lat, 0.95)
    del exact, found

    started = time.perf_counter()
    with conn.raw.transaction():  # its counts and mean vector (vector_totals since m010)
        ann = vector._ann(conn, MODEL, dim, 0)
    out["ann_open_s"] = time.perf_counter() - started
    assert ann is not None
    for ef in args.ef:
        vector.ANN_EF_SEARCH = ef
        lat, recall = [], []
        for q, want in zip(picked, truth, strict=True):
            started = time.perf_counter()
            found = ann.match(conn, q, DEPTH)
            lat.append((time.perf_counter() - started) * 1000)
            recall.append(len(set(top_docs(found.ranked)) & set(want)) / max(len(want), 1))
        out[f"hnsw_ef{ef}"] = (percentile(lat, 0.5), percentile(lat, 0.95), statistics.mean(recall))

    if rows <= args.ip_max:  # inner product: the vectors are unit length, so it orders alike
        raw = conn.raw
        raw.execute(f"SET maintenance_work_mem = {pg_vectors.quoted(args.build_memory)}")
        started = time.perf_counter()
        raw.execute(
            f"CREATE INDEX bench_ip ON embeddings USING hnsw ((vector::vector({dim})) "
            f"vector_ip_ops) WHERE model = {pg_vectors.quoted(MODEL)} AND dim = {dim}"
        )
        out["ip_build_s"] = time.perf_counter() - started
        lat = []
        for q in picked:
            literal = pg_vectors._query_literal(q)
            started = time.perf_counter()
            with raw.transaction():
                raw.execute(f"SET LOCAL hnsw.ef_search = {ANN_DEFAULT}")
                raw.execute(
                    f"SELECT embed_hash FROM embeddings WHERE model = %s AND dim = {dim} "
                    f"ORDER BY vector::vector({dim}) <#> %s::vector({dim}) LIMIT {4 * DEPTH}",
                    (MODEL, literal),
                ).fetchall()
            lat.append((time.perf_counter() - started) * 1000)
        out["ip_p50"], out["ip_p95"] = percentile(lat, 0.5), percentile(lat, 0.95)
        raw.execute("DROP INDEX bench_ip")

    if rows <= args.bytea_max:  # the matrix from BYTEA, as the store kept it before m004
        raw = conn.raw
        raw.execute(
            "CREATE TABLE bench_bytea AS SELECT embed_hash, "
            "substring(vector_send(vector) from 5) AS v FROM embeddings"
        )
        raw.execute("CREATE INDEX ON bench_bytea(embed_hash)")
        times = {"bytea": [], "vector": []}
        for _ in range(3):
            started = time.perf_counter()
            got = raw.execute(
                "SELECT c.id, c.document_id, b.v FROM chunks c JOIN bench_bytea b "
                "ON b.embed_hash = c.embed_hash ORDER BY c.id"
            ).fetchall()
            np.frombuffer(b"".join(r[2] for r in got), ">f4").astype(np.float32)
            times["bytea"].append(time.perf_counter() - started)
            started = time.perf_counter()
            with raw.transaction():
                vectors.load_matrix(conn, MODEL, dim=dim)
            times["vector"].append(time.perf_counter() - started)
        out["bytea_load_s"] = statistics.median(times["bytea"])
        out["vector_load_s"] = statistics.median(times["vector"])
        raw.execute("DROP TABLE bench_bytea")

    # store(): one batch of 256 new vectors with the HNSW index in place, as the backfill does.
    rng = np.random.default_rng(1)
    extra = synthetic(real, 256, args.noise, seed=7)
    with Transaction(conn):
        conn.executemany(
            "INSERT INTO chunks(document_id, chunk_index, section, text, embed_hash) "
            "VALUES (1, 9, '', '', ?)",
            [(f"x{i}",) for i in range(256)],
        )
    started = time.perf_counter()
    with Transaction(conn):
        vectors.store(conn, MODEL, [(f"x{i}", extra[i]) for i in range(256)])
    out["store_ms_per_vector"] = (time.perf_counter() - started) * 1000 / 256
    del rng
    conn.close()
    if not args.keep:
        import psycopg

        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS bench_vectors_{rows} WITH (FORCE)")
    return out


ANN_DEFAULT = vector.ANN_EF_SEARCH


def report(results: list[dict[str, object]], args: argparse.Namespace) -> str:
    load = os.getloadavg()
    lines = [
        f"`python bench/pg_vectors.py --sizes {args.sizes} --queries {args.queries} "
        f"--ef {','.join(map(str, args.ef))}`, PostgreSQL 18 + pgvector 0.8 (scripts/postgres "
        f"--no-fsync), {os.cpu_count()} cores shared with other work, load average at the end "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}. Vectors: real e5-small document "
        f"vectors plus covariance-shaped noise (×{args.noise}), 384-d; {args.queries} real "
        f"queries; depth {DEPTH} (a top-10 search). Times in ms unless marked s.",
        "",
        "| chunks | DB MB | embeddings MB | HNSW MB | COPY s | HNSW build s | exact load s "
        "| exact RSS MB | exact p50 | exact p95 | "
        + " | ".join(f"HNSW ef{ef} p50 / p95 / recall@10" for ef in args.ef)
        + " | store() ms/vector | HNSW counts + mean s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        + "---:|" * len(args.ef)
        + "---:|---:|",
    ]
    for r in results:
        cells = [
            f"{r['rows']:,}",
            f"{r['db_mb']:.0f}",
            f"{r['table_mb']:.0f}",
            f"{r['hnsw_mb']:.0f}",
            f"{r['load_s']:.1f}",
            f"{r['build_s']:.1f}",
            f"{r['exact_load_s']:.2f}",
            f"{r['exact_rss_mb']:.0f}",
            f"{r['exact_p50']:.1f}",
            f"{r['exact_p95']:.1f}",
        ]
        for ef in args.ef:
            p50, p95, rec = r[f"hnsw_ef{ef}"]  # type: ignore[misc]
            cells.append(f"{p50:.1f} / {p95:.1f} / {rec:.3f}")
        cells.append(f"{r['store_ms_per_vector']:.2f}")
        cells.append(f"{r['ann_open_s']:.2f}" if "ann_open_s" in r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    extra = [r for r in results if "ip_build_s" in r or "bytea_load_s" in r]
    if extra:
        lines += [
            "",
            "| chunks | HNSW inner product: build s, p50 / p95 (no fetch of chunks) "
            "| matrix load: BYTEA s | matrix load: pgvector binary s |",
            "|---:|---:|---:|---:|",
        ]
        for r in extra:
            ip = (
                f"{r['ip_build_s']:.1f}, {r['ip_p50']:.1f} / {r['ip_p95']:.1f}"
                if "ip_build_s" in r
                else "-"
            )
            by = f"{r['bytea_load_s']:.2f}" if "bytea_load_s" in r else "-"
            ve = f"{r['vector_load_s']:.2f}" if "vector_load_s" in r else "-"
            lines.append(f"| {r['rows']:,} | {ip} | {by} | {ve} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a superuser URL (scripts/postgres url DIR)")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", type=lambda s: [int(x) for x in s.split(",")], default=[200, 400])
    parser.add_argument("--noise", type=float, default=0.5)
    parser.add_argument("--ip-max", type=int, default=100_000)
    parser.add_argument("--bytea-max", type=int, default=100_000)
    parser.add_argument("--build-memory", default="3GB", help="maintenance_work_mem")
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    real, queries = real_vectors()
    results = []
    for rows in (int(s) for s in args.sizes.split(",")):
        print(f"{rows:,} chunks ...", file=sys.stderr, flush=True)
        results.append(run_size(args.url, rows, real, queries, args))
        print(results[-1], file=sys.stderr, flush=True)
    text = report(results, args)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
