"""`tsm status` and `tsm doctor` name the store and check it: on a real PostgreSQL (the sample
index moved there with `tsm import`, real vectors), the server's and pgvector's versions, the
URL without its password, the database's size, every index valid, keyword rows for every
chunk, no leftover rows; with the server stopped, a failed check and exit 2, never a hang or
a traceback. On SQLite the same keyword and leftover checks run after PRAGMA quick_check."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pg
import psycopg
import pytest

from tsm.store.postgres import vectors as pg_vectors

PG_DATABASE_CHECKS = [
    "connection", "server", "pgvector", "indexes", "schema", "contents", "keywords", "orphans",
]  # fmt: skip
SQLITE_DATABASE_CHECKS = ["integrity", "schema", "contents", "keywords", "orphans"]
OLD_STATUS_KEYS = {
    "documents", "total_documents", "total_chunks", "db_size_bytes", "model_name",
    "embedding_dim", "schema_version", "chunks_without_vectors", "vectors_done",
    "vectors_total", "embed_rate", "embed_rate_at", "configured_model", "vectors_stale",
    "index_root", "db_path", "trusted", "warnings",
}  # fmt: skip

SAMPLE_ON_SQLITE = "compares the SQLite sample index with a PostgreSQL copy of it"


def with_password(url: str, password: str) -> str:
    """`url` with a password for its user (`tsm` on the socket is trusted: the server
    ignores it). The host part stays as it was: empty for the socket's URL."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{password}@{host}"))


def moved_to(tsm: Any, url: str, tmp_path: Path) -> dict[str, str]:
    """The sample index (the test's SQLite one) exported and imported into `url`. The
    import writes the root's team workspace id into its state dir: the test's own copy."""
    file = tmp_path / "sample.tsm.gz"
    assert tsm("export", str(file)).code == 0
    env = {"TSM_STORE_URL": url}
    result = tsm("import", str(file), "-f", "json", env=env)
    assert result.code == 0, result.err
    return env


def database_checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    section = report["sections"][0]
    assert section["name"] == "database"
    return {item["name"]: item for item in section["items"]}


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_status_names_the_store_on_both(
    indexed: Path, tsm: Any, pg_url: str, tmp_path: Path
) -> None:
    local = tsm("status", "-f", "json")
    assert local.code == 0, local.err
    status = local.json()
    assert OLD_STATUS_KEYS <= set(status)
    assert status["store"] == "sqlite" and status["store_url"] is None
    assert status["server_version"] is None and status["pgvector_version"] is None
    assert status["db_path"] == str(indexed / ".tsm" / "tsm.db")
    text = " ".join(tsm("status", "-f", "human").out.split())  # the key column is padded
    assert "store: sqlite" in text and "server version" not in text  # no empty server lines

    secret_url = with_password(pg_url, "hunter2")
    env = moved_to(tsm, secret_url, tmp_path)
    result = tsm("status", "-f", "json", env=env)
    assert result.code == 0, result.err
    server = result.json()
    assert OLD_STATUS_KEYS <= set(server)
    with psycopg.connect(pg_url) as conn:
        version, vector, size = conn.execute(
            "SELECT current_setting('server_version'), "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
            "pg_database_size(current_database())"
        ).fetchone()
    assert server["store"] == "postgresql"
    assert server["store_url"] == server["db_path"] == with_password(pg_url, "***")
    assert (server["server_version"], server["pgvector_version"]) == (version, vector)
    assert server["db_size_bytes"] == pytest.approx(size, rel=0.2) and size > 0
    for key in ("total_documents", "total_chunks", "vectors_done", "model_name", "schema_version"):
        assert server[key] == status[key], key
    human = tsm("status", "-f", "human", env=env)
    text = " ".join(human.out.split())
    assert human.code == 0 and "store: postgresql" in text, human.err
    assert f"server version: {version}" in text and f"pgvector version: {vector}" in text
    assert "hunter2" not in result.out + human.out + result.err + human.err


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_doctor_checks_the_server_and_finds_damage(
    indexed: Path, tsm: Any, pg_url: str, tmp_path: Path
) -> None:
    env = moved_to(tsm, pg_url, tmp_path)
    result = tsm("doctor", "-f", "json", env=env)
    assert result.code == 0, result.out + result.err
    checks = database_checks(result.json())
    assert list(checks) == PG_DATABASE_CHECKS  # no quick_check, no file checks
    assert all(c["status"] == "ok" for c in checks.values()), checks
    assert "pgvector 0." in checks["pgvector"]["message"]
    assert "indexes valid" in checks["indexes"]["message"]

    with psycopg.connect(pg_url, autocommit=True) as conn:
        (chunks,) = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
        conn.execute(
            "UPDATE pg_index SET indisvalid = false "
            "WHERE indexrelid = 'keyword_postings_pkey'::regclass"
        )
        conn.execute("DELETE FROM chunk_keywords WHERE chunk_id = (SELECT MIN(id) FROM chunks)")
        conn.execute(  # a model with enough vectors for a search to use its missing index
            "INSERT INTO embeddings(model, embed_hash, dim, vector) "
            "SELECT 'other-model', 'no-such-text-' || n, 3, '[1,2,3]' "
            "FROM generate_series(1, %s) AS n",
            (pg_vectors.HNSW_MIN_ROWS,),
        )
        conn.execute(  # one too few to need one
            "INSERT INTO embeddings(model, embed_hash, dim, vector) "
            "SELECT 'small-model', 'no-such-text-' || n, 3, '[1,2,3]' "
            "FROM generate_series(1, %s) AS n",
            (pg_vectors.HNSW_MIN_ROWS - 1,),
        )
    damaged = tsm("doctor", "-f", "json", env=env)
    assert damaged.code == 2 and damaged.error()["kind"] == "system_error"
    checks = database_checks(damaged.json())
    assert checks["indexes"]["status"] == "error"
    assert "keyword_postings_pkey" in checks["indexes"]["message"]
    assert "REINDEX" in checks["indexes"]["fix"]
    assert checks["keywords"]["status"] == "error"
    assert checks["keywords"]["message"].startswith(f"1 of {chunks} chunks have no keyword row")
    orphans = 2 * pg_vectors.HNSW_MIN_ROWS - 1
    assert checks["orphans"]["status"] == "warn"
    assert f"{orphans} vectors" in checks["orphans"]["message"]
    assert checks["hnsw"]["status"] == "warn" and "other-model (3)" in checks["hnsw"]["message"]
    assert "small-model" not in checks["hnsw"]["message"]
    human = tsm("doctor", "-f", "human", env=env)
    assert human.code == 2 and "ERROR indexes" in human.out and "Traceback" not in human.err


@pytest.fixture
def own_server() -> Iterator[pg.PgServer]:
    """A server of this test's own, which it stops (under /tmp: as root, scripts/postgres runs
    it as another user, who must reach the directory)."""
    directory = Path(tempfile.mkdtemp(prefix="tsm-test-pg-stopped-"))
    try:
        yield pg.start(directory)
    finally:  # stopped already when the test went well
        subprocess.run([str(pg.SCRIPT), "stop", str(directory)], capture_output=True, timeout=120)
        shutil.rmtree(directory, ignore_errors=True)


def test_doctor_with_the_server_stopped_is_a_failed_check(
    own_server: pg.PgServer, tsm: Any, vault: Path
) -> None:
    env = {"TSM_STORE_URL": own_server.url}
    assert tsm("index", "--no-embed", "-f", "json", env=env).code == 0
    up = tsm("doctor", "-f", "json", env=env)
    assert database_checks(up.json())["connection"]["status"] == "ok", up.out

    pg.script("stop", str(own_server.dir))
    down = tsm("doctor", "-f", "json", env=env, timeout=60)  # a hang fails here
    assert down.code == 2, down.err
    report = down.json()
    assert [s["name"] for s in report["sections"]] == [
        "database", "daemon", "embedder", "vectors", "paths", "trust",
    ]  # fmt: skip
    checks = database_checks(report)
    assert list(checks) == ["connection"]
    connection = checks["connection"]
    assert connection["status"] == "error"
    assert own_server.url in connection["message"] and "store.url" in connection["message"]
    assert "server is running" in connection["fix"]
    assert report["error_count"] == 1 and down.error()["kind"] == "system_error"
    human = tsm("doctor", "-f", "human", env=env, timeout=60)
    assert human.code == 2 and "ERROR connection" in human.out
    assert "Traceback" not in down.err + human.err

    status = tsm("status", "-f", "json", env=env, timeout=60)
    assert status.code in (1, 2) and "store.url" in status.error()["error"]
    assert len(status.err.strip().splitlines()) == 1 and "Traceback" not in status.err


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_doctor_on_sqlite_finds_chunks_without_keyword_rows(indexed: Path, tsm: Any) -> None:
    ok = tsm("doctor", "-f", "json")
    assert ok.code == 0, ok.out
    checks = database_checks(ok.json())
    assert list(checks) == SQLITE_DATABASE_CHECKS
    assert checks["keywords"]["status"] == checks["orphans"]["status"] == "ok"

    conn = sqlite3.connect(indexed / ".tsm" / "tsm.db")
    (chunks,) = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
    conn.execute("DELETE FROM chunks_fts WHERE rowid = (SELECT MIN(id) FROM chunks)")
    conn.commit()
    conn.close()
    damaged = tsm("doctor", "-f", "json")
    assert damaged.code == 2
    keywords = database_checks(damaged.json())["keywords"]
    assert keywords["status"] == "error"
    assert keywords["message"].startswith(f"1 of {chunks} chunks have no keyword row")
    assert "tsm reindex fts" in keywords["fix"]

    assert tsm("reindex", "fts", "-f", "json").code == 0
    assert tsm("doctor", "-f", "json").code == 0
