"""The test suite's PostgreSQL server (scripts/postgres, tests/pg.py): it starts, has
pgvector, gives each test a database of its own and drops it, refuses a wrong password, and
is gone when the run ends. Users start the same script (README, "Team store on PostgreSQL")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pg
import psycopg
import pytest

pytestmark = pytest.mark.postgres

ROOT = os.geteuid() == 0


def test_the_server_is_postgresql_with_pgvector(pg_server: pg.PgServer) -> None:
    port = (pg_server.dir / "port").read_text().strip()
    assert pg_server.url == f"postgresql://tsm@/tsm?host={pg_server.dir}&port={port}"
    with psycopg.connect(pg_server.url) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()
        vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert vector.fetchone() is not None, "CREATE EXTENSION vector was not run in `tsm`"
        distance = conn.execute("SELECT '[1,2,3]'::vector <-> '[1,2,5]'::vector").fetchone()
    assert version is not None and int(version[0]) >= 160000
    assert distance == (2.0,)
    # on the unix socket in DIR, which only DIR's owner may enter
    assert (pg_server.dir / f".s.PGSQL.{port}").is_socket()
    assert pg_server.dir.stat().st_mode & 0o777 == 0o700


def test_the_superuser_is_refused_on_the_address_every_local_user_reaches(
    pg_server: pg.PgServer,
) -> None:
    """Any user of the machine can open 127.0.0.1: there the superuser, who can run
    programs as the server's user, must give a password, and has none."""
    port = (pg_server.dir / "port").read_text().strip()
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(f"postgresql://tsm@127.0.0.1:{port}/tsm", connect_timeout=10)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(f"postgresql://tsm:tsm@127.0.0.1:{port}/tsm", connect_timeout=10)


def test_a_test_gets_an_empty_database_of_its_own(pg_url: str, pg_server: pg.PgServer) -> None:
    name = urlsplit(pg_url).path.lstrip("/")
    assert name.startswith("t_") and pg_url == pg_server.database_url(name)
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        assert tables == (0,)
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'").fetchone()
        conn.execute("CREATE TABLE v (id int PRIMARY KEY, e vector(3))")
        conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")


def test_the_database_is_dropped_after_the_test(pg_server: pg.PgServer) -> None:
    """Even while a process (a test's daemon) is still connected to it."""
    with pg.fresh_database(pg_server) as url:
        name = urlsplit(url).path.lstrip("/")
        assert pg.database_exists(pg_server, name)
        lingering = psycopg.connect(url)
    assert not pg.database_exists(pg_server, name)
    assert lingering.broken or lingering.closed or _fails(lingering)
    lingering.close()


def _fails(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False


def test_a_wrong_password_is_refused(pg_server: pg.PgServer) -> None:
    right = pg_server.password_url
    with psycopg.connect(right) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (pg.PASSWORD_ROLE,)
    secret = right.split(":")[2].split("@")[0]
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(right.replace(f":{secret}@", ":wrong-password@"))
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        psycopg.connect(right.replace(f":{secret}@", "@"))


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A directory for a second server (in its `pg` folder), where its system user can reach
    it when we are root (pytest's tmp_path is private to root); the server is stopped after."""
    directory = Path(tempfile.mkdtemp(prefix="tsm-pg-script-", dir="/tmp"))
    directory.chmod(0o755)
    yield directory
    subprocess.run(
        [str(pg.SCRIPT), "stop", str(directory / "pg")], capture_output=True, timeout=120
    )
    shutil.rmtree(directory, ignore_errors=True)


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(pg.SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_the_script_starts_stops_and_restarts_a_server(server_dir: Path) -> None:
    started = run_script("start", str(server_dir / "pg"))
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    port = (server_dir / "pg" / "port").read_text().strip()
    assert url == f"postgresql://tsm@/tsm?host={server_dir / 'pg'}&port={port}"
    assert run_script("start", str(server_dir / "pg")).stdout.strip() == url  # already up
    assert run_script("url", str(server_dir / "pg")).stdout.strip() == url
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (42)")

    stopped = run_script("stop", str(server_dir / "pg"))
    assert stopped.returncode == 0, stopped.stderr
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=5)
    gone = run_script("url", str(server_dir / "pg"))
    assert gone.returncode == 1 and gone.stdout == ""
    assert gone.stderr.strip().splitlines() == [
        f"scripts/postgres url: no server is running in {server_dir / 'pg'}"
    ]

    again = run_script("start", str(server_dir / "pg"))
    assert again.returncode == 0, again.stderr
    with psycopg.connect(again.stdout.strip()) as conn:
        assert conn.execute("SELECT n FROM kept").fetchone() == (42,)


def test_a_server_an_older_script_opened_to_local_users_is_closed_at_start(
    server_dir: Path,
) -> None:
    """Clusters made before let the superuser in on 127.0.0.1 without a password, and a DIR
    may be left open: `start` of a running server puts both right."""
    pg_dir = server_dir / "pg"
    url = run_script("start", str(pg_dir)).stdout.strip()
    port = (pg_dir / "port").read_text().strip()
    hba = pg_dir / "data" / "pg_hba.conf"
    hba.write_text("local all all trust\nhost all tsm 127.0.0.1/32 trust\n")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")
    pg_dir.chmod(0o755)
    tcp = f"postgresql://tsm@127.0.0.1:{port}/tsm"
    deadline = time.monotonic() + 30
    while _fails_to_connect(tcp):  # the reload is asynchronous
        assert time.monotonic() < deadline, "the old rules were never loaded"
        time.sleep(0.2)

    again = run_script("start", str(pg_dir))
    assert again.returncode == 0 and again.stdout.strip() == url, again.stderr
    assert pg_dir.stat().st_mode & 0o777 == 0o700
    deadline = time.monotonic() + 30
    while not _fails_to_connect(tcp):
        assert time.monotonic() < deadline, "the superuser still gets in on 127.0.0.1"
        time.sleep(0.2)


def _fails_to_connect(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except psycopg.OperationalError:
        return True
    return False


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "usage:"),
        (("restart", "/tmp/x"), "usage:"),
        (("start",), "usage:"),
        (("start", "/tmp/x", "--fast"), "unknown option"),
        (("url", "/nonexistent/tsm-pg"), "no server is running in /nonexistent/tsm-pg"),
    ],
)
def test_bad_use_is_a_short_error_with_exit_1(args: tuple[str, ...], message: str) -> None:
    result = run_script(*args)
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_dir_that_is_a_link_or_someone_elses_is_refused(server_dir: Path) -> None:
    """`start` makes DIR private (and as root gives it to the server's user): a /tmp name
    planted as a link to another folder, or a folder another user made, is refused first."""
    target = server_dir / "target"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (server_dir / "pg").symlink_to(target)
    linked = run_script("start", str(server_dir / "pg"))
    assert linked.returncode == 1, linked.stderr
    assert "is a symlink or not a directory" in linked.stderr
    assert target.stat().st_mode & 0o777 == 0o755 and list(target.iterdir()) == []
    if ROOT:
        theirs = server_dir / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)  # nobody's
        refused = run_script("start", str(theirs))
        assert refused.returncode == 1 and "belongs to another user" in refused.stderr
        assert list(theirs.iterdir()) == []


@pytest.mark.skipif(not ROOT, reason="only root runs the server as another user")
def test_as_root_a_dir_the_server_user_cannot_reach_is_refused(tmp_path: Path) -> None:
    """pytest's tmp_path is private to root: the server's user could not enter it."""
    result = run_script("start", str(tmp_path / "pg"))
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "runs as tsm-postgres" in line and "cannot reach" in line
    assert not (tmp_path / "pg" / "data").exists()


def test_no_server_is_left_running_after_a_test_run() -> None:
    """A whole pytest run with TSM_TEST_STORE=postgres on two workers that both use the
    server: a test about the SQLite file is skipped with its reason, and at the end the
    server is stopped and its directory removed."""
    parent = Path(tempfile.mkdtemp(prefix="tsm-pg-run-", dir="/tmp"))
    parent.chmod(0o755)  # as /tmp: the server's user (when we are root) must enter it
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TSM_", "PYTEST_"))}
        env |= {pg.PG_PARENT_VARIABLE: str(parent), pg.STORE_VARIABLE: "postgres"}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rs", "-n", "2", "-p", "no:cacheprovider",
             f"{__file__}::test_the_server_is_postgresql_with_pgvector",
             f"{__file__}::test_a_wrong_password_is_refused",
             f"{__file__}::test_a_sqlite_only_test_is_skipped_on_postgres"],
            cwd=pg.REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "2 passed, 1 skipped" in proc.stdout
        assert "SQLite only: the marker's own test" in proc.stdout
        assert list(parent.iterdir()) == []  # the run's directory is gone
        assert servers_under(parent) == []
    finally:
        for pid in servers_under(parent):
            os.kill(pid, 9)
        shutil.rmtree(parent, ignore_errors=True)


def test_a_killed_test_run_leaves_no_server_behind() -> None:
    """pytest killed outright (SIGKILL: no teardown runs) while its server is up: the
    watcher started with the server stops it and removes its directory."""
    parent = Path(tempfile.mkdtemp(prefix="tsm-pg-kill-", dir="/tmp"))
    parent.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TSM_", "PYTEST_"))}
    env |= {pg.PG_PARENT_VARIABLE: str(parent), "PYTEST_TSM_PG_HOLD": "1"}
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         f"{__file__}::test_holds_the_server_until_killed"],
        cwd=pg.REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not list(parent.glob("*/watched")) or not servers_under(parent):
            assert run.poll() is None and time.monotonic() < deadline, "no server started"
            time.sleep(0.2)
        run.kill()
        run.wait()
        deadline = time.monotonic() + 30
        while servers_under(parent) or list(parent.iterdir()):
            assert time.monotonic() < deadline, "the server outlived the killed run"
            time.sleep(0.2)
    finally:
        if run.poll() is None:
            run.kill()
        for pid in servers_under(parent):
            os.kill(pid, 9)
        shutil.rmtree(parent, ignore_errors=True)


@pytest.mark.skipif(not os.environ.get("PYTEST_TSM_PG_HOLD"), reason="run by the test above")
def test_holds_the_server_until_killed(pg_server: pg.PgServer) -> None:
    time.sleep(120)


@pytest.mark.sqlite_only("the marker's own test")
def test_a_sqlite_only_test_is_skipped_on_postgres() -> None:
    assert "TSM_STORE_URL" not in os.environ  # set for every test with TSM_TEST_STORE=postgres


def servers_under(directory: Path) -> list[int]:
    """The processes whose command line names `directory` (a postgres -D DIR/data)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(directory) in cmdline and "postgres" in cmdline:
            found.append(int(entry.name))
    return found


def test_a_change_to_a_shared_database_is_seen_and_undone(pg_server: pg.PgServer) -> None:
    """What indexed_read_only relies on with TSM_TEST_STORE=postgres: the shared copy of the
    sample index's database is fingerprinted, and put back when a test changed it."""
    with pg.fresh_database(pg_server) as sample_url:
        with psycopg.connect(sample_url) as conn:
            conn.execute("CREATE TABLE notes (path text PRIMARY KEY, e vector(2))")
            conn.execute("INSERT INTO notes VALUES ('a.md', '[1,0]'), ('b.md', '[0,1]')")
        stores = pg.Stores(pg_server, sample=urlsplit(sample_url).path.lstrip("/"))
        with stores.sample_copy() as env:
            before = stores.fingerprint(env)
            assert set(before) == {"notes"}
            with psycopg.connect(env["TSM_STORE_URL"]) as conn:
                conn.execute("UPDATE notes SET e = '[1,1]' WHERE path = 'b.md'")
            assert stores.fingerprint(env) != before
            stores.reset_to_sample(env)
            assert stores.fingerprint(env) == before
