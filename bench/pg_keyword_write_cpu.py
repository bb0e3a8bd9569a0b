#!/usr/bin/env python3
"""Where the CPU of writing PostgreSQL's keyword rows goes, client and server, per 10k chunks.

    python bench/pg_keyword_write_cpu.py --workdir /tmp/pgcopy-work --pg-dir /tmp/pgcopy-pg

The keyword texts of bench/pg_indexing.py's corpus (the tokenized title, section, body and
tags of every chunk, as `tsm index` makes them) are read back from a SQLite index of it.
A PostgreSQL database holds the same documents and chunks with no keyword row; each
variant below copies it (CREATE DATABASE ... TEMPLATE) and writes every document's keyword
rows in one statement, its own transaction, as the writer does, measuring:

- the client's CPU (this process, time.process_time) for building what is sent, and for
  the whole loop (building + psycopg);
- the server's CPU: the backend's own utime + stime from /proc (the server is local);
- the WAL written (pg_current_wal_insert_lsn before and after).

Client-only steps (no server): `split` (FTS5 splitting of each new word, the cache cold as
a run starts), `rows` (dc3b941's keyword_rows: terms and per-column counts, cache warm),
`fields` (dc3b941's keyword_fields: the same as the JSON's lists), `json` (json.dumps of
those fields), `terms` (this checkout's stored_terms: the stored terms and token count only).

Server variants: `json` (dc3b941's statement: one JSON text of the lexemes and their counts,
jsonb_to_recordset, unnest), `json-parse` (the same statement reading the JSON and
unnesting, inserting nothing), `json-nokey` (dc3b941's statement into postings without
their primary key: the heap alone), `terms` (this checkout's keywords.insert: each chunk's
stored terms and token count sent, the server splits and counts them, keywords.POSTINGS),
`terms-parse` (that split and count, inserting nothing), `copy` (binary COPY of
client-built postings and keyword rows: the server's least work to insert them).

Results are printed as a table (seconds over the whole corpus).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))
from pg_indexing import TICK, _stat, build_env, load  # noqa: E402

from tsm.store.postgres import keywords as pgk  # noqa: E402

Doc = list[tuple[int, int, tuple[str, str, str, str]]]  # (chunk id, document id, texts)


# --- dc3b941's way, kept here to be measured beside the new one ------------------------------


def old_keyword_rows(rows: Sequence[Sequence[str]]) -> list[tuple[dict[str, list[int]], str, int]]:
    """dc3b941's keyword_rows: (counts per lexeme and column, stored terms, tokens)."""
    known = pgk._learn(w for row in rows for text in row for w in text.split())
    out = []
    for row in rows:
        counts: dict[str, list[int]] = {}
        columns = []
        tokens = 0
        for col, text in enumerate(row):
            words = text.split()
            columns.append(" ".join([j for w in words if (j := known[w])]))
            for word, n in Counter(words).items():
                terms = known[word].split()
                tokens += n * len(terms)
                for term in terms:
                    found = counts.get(term)
                    if found is None:
                        counts[term] = found = [0] * 4
                    found[col] += n
        out.append((counts, "\n".join(columns), tokens))
    return out


def old_keyword_fields(rows: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """dc3b941's keyword_fields: the JSON's fields of each chunk."""
    out = []
    for counts, terms, tokens in old_keyword_rows(rows):
        found = list(counts.values())
        fields: dict[str, Any] = {"n": tokens, "t": terms, "l": list(counts)}
        for c in range(4):
            fields[f"c{c}"] = [f[c] for f in found]
        out.append(fields)
    return out


OLD_INSERT = """WITH r AS MATERIALIZED (
               SELECT r.*, (SELECT c.document_id FROM chunks c WHERE c.id = r.id) AS document_id
               FROM jsonb_to_recordset(?::jsonb)
                   AS r(id BIGINT, n INTEGER, t TEXT, l TEXT[], c0 INTEGER[], c1 INTEGER[],
                        c2 INTEGER[], c3 INTEGER[])
           ), k AS (
               INSERT INTO chunk_keywords(chunk_id, terms, tokens) SELECT r.id, r.t, r.n FROM r
           )
           INSERT INTO keyword_postings(lexeme, chunk_id, document_id, c0, c1, c2, c3, tokens)
           SELECT e.l, r.id, r.document_id, e.c0, e.c1, e.c2, e.c3, r.n
           FROM r, unnest(r.l, r.c0, r.c1, r.c2, r.c3) AS e(l, c0, c1, c2, c3)"""


def _old_json(doc: Doc) -> str:
    fields = old_keyword_fields([texts for _, _, texts in doc])
    batch = [{"id": c, **f} for (c, _, _), f in zip(doc, fields, strict=True)]
    return json.dumps(batch, ensure_ascii=False)


def keyword_texts(lite: Path) -> dict[str, list[tuple[int, tuple[str, str, str, str]]]]:
    import sqlite3

    conn = sqlite3.connect(lite)
    out: dict[str, list[tuple[int, tuple[str, str, str, str]]]] = defaultdict(list)
    for path, index, *texts in conn.execute(
        """SELECT d.path, c.chunk_index, f.title, f.section, f.body, f.tags
           FROM chunks c JOIN documents d ON d.id = c.document_id
           JOIN chunks_fts f ON f.rowid = c.id ORDER BY d.path, c.chunk_index"""
    ):
        out[path].append((index, tuple(texts)))  # type: ignore[arg-type]
    conn.close()
    return out


def index(python: str, env: dict[str, str]) -> None:
    subprocess.run(
        [python, "-m", "tsm", "index", "--no-embed", "-f", "json"],
        env=env,
        check=True,
        capture_output=True,
    )


def backend_cpu(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


# --- what each variant sends ----------------------------------------------------------------


def send_json(conn: Any, doc: Doc) -> None:
    conn.execute(OLD_INSERT, (_old_json(doc),))


JSON_PARSE = """WITH r AS MATERIALIZED (
               SELECT r.*, (SELECT c.document_id FROM chunks c WHERE c.id = r.id) AS document_id
               FROM jsonb_to_recordset(?::jsonb)
                   AS r(id BIGINT, n INTEGER, t TEXT, l TEXT[], c0 INTEGER[], c1 INTEGER[],
                        c2 INTEGER[], c3 INTEGER[]))
           SELECT count(*), sum(e.c0 + e.c1 + e.c2 + e.c3 + r.n + r.document_id),
                  max(length(e.l)), max(length(r.t))
           FROM r, unnest(r.l, r.c0, r.c1, r.c2, r.c3) AS e(l, c0, c1, c2, c3)"""


def send_json_parse(conn: Any, doc: Doc) -> None:
    conn.execute(JSON_PARSE, (_old_json(doc),)).fetchall()


TERMS_PARSE = f"""WITH r AS MATERIALIZED (
        SELECT r.id, r.n, r.t, (SELECT c.document_id FROM chunks c WHERE c.id = r.id) AS doc
        FROM unnest(?::bigint[], ?::text[], ?::int[]) AS r(id, t, n))
    SELECT count(*), sum(e.c0 + e.c1 + e.c2 + e.c3 + r.n + r.doc), max(length(e.lexeme))
    FROM r CROSS JOIN LATERAL ({pgk.POSTINGS.format(terms="r.t")}) e"""


def send_terms(conn: Any, doc: Doc) -> None:
    """This checkout's keywords.insert: the stored terms sent, the postings counted there."""
    pgk.insert(conn, [(c, *texts) for c, _, texts in doc])


def send_terms_parse(conn: Any, doc: Doc) -> None:
    made = pgk.stored_terms([texts for _, _, texts in doc])
    params = ([c for c, _, _ in doc], [t for t, _ in made], [n for _, n in made])
    conn.execute(TERMS_PARSE, params).fetchall()


def send_copy(conn: Any, doc: Doc) -> None:
    rows = old_keyword_rows([texts for _, _, texts in doc])
    raw = conn.raw
    with raw.cursor() as cur:
        with cur.copy(
            "COPY chunk_keywords(chunk_id, terms, tokens) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "int4"])
            for (chunk, _, _), row in zip(doc, rows, strict=True):
                copy.write_row((chunk, row[1], row[2]))
        with cur.copy(
            "COPY keyword_postings(lexeme, chunk_id, document_id, c0, c1, c2, c3, tokens) "
            "FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "int8", "int8", "int4", "int4", "int4", "int4", "int4"])
            for (chunk, doc_id, _), row in zip(doc, rows, strict=True):
                for lex, (c0, c1, c2, c3) in row[0].items():
                    copy.write_row((lex, chunk, doc_id, c0, c1, c2, c3, row[2]))


VARIANTS: dict[str, Callable[[Any, Doc], None]] = {
    "json": send_json,
    "json-parse": send_json_parse,
    "json-nokey": send_json,
    "terms": send_terms,
    "terms-parse": send_terms_parse,
    "copy": send_copy,
}


def client_steps(docs: list[Doc]) -> dict[str, float]:
    """CPU seconds of the client's steps alone, over every document."""
    out: dict[str, float] = {}
    pgk._known = {}
    start = time.process_time()
    for doc in docs:
        pgk._learn(w for _, _, texts in doc for text in texts for w in text.split())
    out["split"] = time.process_time() - start
    steps: dict[str, Callable[[Doc], object]] = {
        "rows": lambda doc: old_keyword_rows([t for _, _, t in doc]),
        "fields": lambda doc: old_keyword_fields([t for _, _, t in doc]),
        "terms": lambda doc: pgk.stored_terms([t for _, _, t in doc]),
    }
    for name, step in steps.items():
        start = time.process_time()
        for doc in docs:
            step(doc)
        out[name] = time.process_time() - start
    fields = [old_keyword_fields([t for _, _, t in doc]) for doc in docs]
    start = time.process_time()
    for f in fields:
        json.dumps(f, ensure_ascii=False)
    out["json"] = time.process_time() - start
    return out


def run_variant(url: str, name: str, docs: list[Doc]) -> dict[str, float]:
    from tsm.store.postgres.connection import connect

    conn = connect(url)
    try:
        if name == "json-nokey":
            conn.execute("ALTER TABLE keyword_postings DROP CONSTRAINT keyword_postings_pkey")
        pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        (lsn0,) = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()
        send = VARIANTS[name]
        pgk._known = {}  # each variant starts as a run does
        server0, client0, wall0 = backend_cpu(pid), time.process_time(), time.perf_counter()
        for doc in docs:
            send(conn, doc)
        wall = time.perf_counter() - wall0
        client, server = time.process_time() - client0, backend_cpu(pid) - server0
        (wal,) = conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ?::pg_lsn)", (str(lsn0),)
        ).fetchone()
        (postings,) = conn.execute("SELECT count(*) FROM keyword_postings").fetchone()
        return {
            "wall": wall,
            "client": client,
            "server": server,
            "wal_mb": float(wal) / 2**20,
            "postings": int(postings),
        }
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, help="bench/pg_indexing.py's corpus dir")
    parser.add_argument("--pg-dir", required=True, help="a running scripts/postgres server")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    import psycopg

    work = Path(args.workdir)
    root = work / "corpus"
    if not root.exists():
        raise SystemExit(f"no corpus at {root}: run bench/pg_indexing.py --workdir first")
    url = subprocess.check_output(
        [str(ROOT / "scripts" / "postgres"), "url", args.pg_dir], text=True
    ).strip()
    lite_state = work / "kw-lite"
    if not (lite_state / "tsm.db").exists():
        lite_state.mkdir(exist_ok=True)
        python, env = build_env(ROOT, root, lite_state)
        index(python, env)
    texts = keyword_texts(lite_state / "tsm.db")
    base = f"kwbase_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{base}"')
    base_url = urlunsplit(urlsplit(url)._replace(path=f"/{base}"))
    made: list[str] = [base]
    try:
        state = Path(tempfile.mkdtemp(prefix="kw-pg-state-"))
        python, env = build_env(ROOT, root, state)
        env["TSM_STORE_URL"] = base_url
        index(python, env)
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute("TRUNCATE chunk_keywords, keyword_postings, keyword_totals")
            ids = conn.execute(
                """SELECT d.path, c.chunk_index, c.id, d.id FROM chunks c
                   JOIN documents d ON d.id = c.document_id"""
            ).fetchall()
        by_key = {(p, i): (c, d) for p, i, c, d in ids}
        docs: list[Doc] = [
            [(*by_key[(path, i)], t) for i, t in chunks] for path, chunks in sorted(texts.items())
        ]
        chunks = sum(len(d) for d in docs)
        print(f"{len(docs)} documents, {chunks} chunks; load {load()}", flush=True)
        results: list[tuple[int, str, dict[str, float]]] = []
        for n in range(1, args.rounds + 1):
            steps = client_steps(docs)
            print(f"round {n} client steps (CPU s): {json.dumps(steps)}; load {load()}")
            results.append((n, "client", steps))
            for name in args.variants.split(","):
                db = f"kw_{os.getpid()}_{n}_{name.replace('-', '_')}"
                with psycopg.connect(url, autocommit=True) as admin:
                    admin.execute(f'CREATE DATABASE "{db}" TEMPLATE "{base}"')
                made.append(db)
                before = load()
                got = run_variant(urlunsplit(urlsplit(url)._replace(path=f"/{db}")), name, docs)
                got["load"] = before  # type: ignore[assignment]
                print(f"round {n} {name}: {json.dumps(got)}", flush=True)
                results.append((n, name, got))
                with psycopg.connect(url, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
                made.remove(db)
        print()
        head = "| round | variant | wall s | client CPU s | server CPU s | WAL MiB | postings |"
        print(head + " load |")
        print("|---:|---|---:|---:|---:|---:|---:|---|")
        for n, name, got in results:
            if name == "client":
                continue
            print(
                f"| {n} | {name} | {got['wall']:.1f} | {got['client']:.2f} | "
                f"{got['server']:.2f} | {got['wal_mb']:.0f} | {got['postings']} | {got['load']} |"
            )
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            for db in made:
                admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
