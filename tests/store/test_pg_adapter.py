"""store/postgres.py's PgConnection: the store's SQLite-style SQL on a real PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tsm.errors import ConfigError
from tsm.store.connect import Transaction, pipelined
from tsm.store.postgres import connection as postgres


def test_percent_is_an_operator_with_or_without_parameters(pg_url: str) -> None:
    """`?` becomes psycopg's `%s`, and a `%` of the SQL stays the modulo operator whether
    or not the statement has parameters (psycopg reads placeholders only when given some)."""
    conn = postgres.connect(pg_url)
    try:
        assert conn.execute("SELECT 7 % 3").fetchone()[0] == 1
        assert conn.execute("SELECT 7 % ?", (4,)).fetchone()[0] == 3
        assert conn.execute("SELECT ? || '%'", ("50",)).fetchone()[0] == "50%"
    finally:
        conn.close()


def test_transactions_follow_the_store_s_begin_and_commit(pg_url: str) -> None:
    conn = postgres.connect(pg_url)
    try:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.execute("BEGIN IMMEDIATE")
        assert conn.in_transaction
        conn.executemany("INSERT INTO t(x) VALUES (?)", [(1,), (2,)])
        conn.rollback()
        assert not conn.in_transaction
        assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
        changes = conn.total_changes
        conn.execute("INSERT INTO t(x) VALUES (?)", (3,))
        assert conn.total_changes == changes + 1
    finally:
        conn.close()


def test_a_pipelined_transaction_reads_what_it_needs_and_counts_its_writes(pg_url: str) -> None:
    """Inside `pipelined`, a statement's result is waited for when it is read, and the rows
    written count in total_changes (the daemon's writer compares it) once the block ends."""
    conn = postgres.connect(pg_url)
    try:
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        before = conn.total_changes
        with pipelined(conn), Transaction(conn):
            conn.executemany("INSERT INTO t(x) VALUES (?)", [(1,), (2,)])
            assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2
            assert conn.execute("UPDATE t SET x = x + 10 WHERE x = ?", (1,)).rowcount == 1
            assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")] == [2, 11]
            conn.execute("INSERT INTO t(x) VALUES (?)", (3,))
        assert conn.total_changes == before + 4
        assert not conn.in_transaction
        assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")] == [2, 3, 11]
    finally:
        conn.close()


@pytest.mark.parametrize("read_inside", [False, True], ids=["found at commit", "found inside"])
def test_an_error_in_a_pipeline_leaves_nothing_and_the_connection_usable(
    pg_url: str, read_inside: bool
) -> None:
    """A failing statement may be found only when COMMIT's sync comes back (the server then
    skipped the COMMIT), or at a read inside the block: either way the error is raised, the
    transaction leaves nothing, and the next one runs (indexing._locked runs it again)."""
    import psycopg

    conn = postgres.connect(pg_url)
    try:
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO t(x) VALUES (1)")
        before = conn.total_changes
        with pytest.raises(psycopg.errors.UniqueViolation):
            with pipelined(conn), Transaction(conn):
                conn.execute("INSERT INTO t(x) VALUES (?)", (5,))
                conn.execute("INSERT INTO t(x) VALUES (?)", (1,))  # already there
                conn.execute("INSERT INTO t(x) VALUES (?)", (6,))
                if read_inside:
                    conn.execute("SELECT count(*) FROM t").fetchone()
        assert not conn.in_transaction
        assert conn.total_changes == before
        with pipelined(conn), Transaction(conn):
            conn.execute("INSERT INTO t(x) VALUES (?)", (7,))
        assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")] == [1, 7]
    finally:
        conn.close()


def test_a_nul_in_text_is_stored_as_a_replacement_character(pg_url: str) -> None:
    conn = postgres.connect(pg_url)
    try:
        assert conn.execute("SELECT ?::text", ("a\x00b",)).fetchone()[0] == "a\ufffdb"
    finally:
        conn.close()


def test_a_url_of_another_scheme_is_a_user_error_naming_the_setting() -> None:
    with pytest.raises(ConfigError) as info:
        postgres.connect("mysql://me:secret@db/x")
    assert "TSM_STORE_URL" in info.value.message and "secret" not in info.value.message


def test_a_server_that_is_not_there_is_named_with_libpq_s_reason() -> None:
    with pytest.raises(ConfigError) as info:
        postgres.connect("postgresql://me:secret@127.0.0.1:9/db")
    message = info.value.message
    assert "Connection refused" in message and "secret" not in message
    assert "\n" not in message


def test_psycopg_missing_is_a_user_error_with_an_install_that_works(tmp_path: Path) -> None:
    """Without psycopg (tsm installed without the postgres extra), a store URL is one line
    whose fix installs psycopg, not the unrelated PyPI package named tsm."""
    code = (
        "import sys; sys.modules['psycopg'] = None; sys.argv = ['tsm', 'status']; "
        "from tsm.cli.entry import main; sys.exit(main())"
    )
    env = {
        **os.environ,
        "TSM_STORE_URL": "postgresql://me:secret@127.0.0.1:9/db",
        "TSM_INDEX_ROOT": str(tmp_path),
        "TSM_STATE_DIR": str(tmp_path / "state"),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said
    assert "psycopg is not installed" in said and "secret" not in said
    assert "pip install 'psycopg[binary]" in said and "tsm[postgres]" not in said
