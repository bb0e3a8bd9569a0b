"""The test session's PostgreSQL server (scripts/postgres) and its throwaway databases.

One server per `pytest` run, in a directory the controller makes (`PG_DIR_VARIABLE` carries
it to pytest-xdist workers): the first worker that needs the server starts it (the script
locks the directory, so a second worker finds it running and gets the same URL), and the
controller, which outlives the workers, stops it and removes the directory at the end
(`finish_run`). Should the controller die before (SIGTERM from `timeout`, SIGKILL), a
watcher process started with the server stops it and removes the directory (`watch`). Each
test gets databases of its own on it (`fresh_database`), dropped after.

`TSM_TEST_STORE=postgres` runs the suite's tsm processes on this server (tests/conftest.py);
the default, `sqlite`, keeps their index in SQLite files."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "postgres"
PG_DIR_VARIABLE = "PYTEST_TSM_PG_DIR"  # not TSM_*: the isolated_env fixture removes those
PG_PARENT_VARIABLE = "PYTEST_TSM_PG_PARENT"  # where the run's directory goes (default /tmp)
PG_OWNER_VARIABLE = "PYTEST_TSM_PG_OWNER"  # the controller's pid: the server lives as long
STORE_VARIABLE = "TSM_TEST_STORE"
STORES = ("sqlite", "postgres")
SAMPLE_DATABASE = "tsm_sample"  # the sample vault's index, built once per run
PASSWORD_ROLE = "tsm_password"  # scripts/postgres: the role that must give its password


def store_under_test() -> str:
    """Which store this run's tsm processes use: TSM_TEST_STORE, `sqlite` by default."""
    store = os.environ.get(STORE_VARIABLE, "sqlite") or "sqlite"
    if store not in STORES:
        raise ValueError(f"{STORE_VARIABLE}={store!r}: expected one of {', '.join(STORES)}")
    return store


@dataclass(frozen=True)
class PgServer:
    dir: Path
    url: str  # the superuser `tsm`, no password, database `tsm`
    password_url: str  # the role that must give its password (scram-sha-256)

    def database_url(self, name: str, *, password: bool = False) -> str:
        parts = urlsplit(self.password_url if password else self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))


def script(*args: str, timeout: float = 120) -> str:
    """scripts/postgres run as a user would; its stdout, or AssertionError with its stderr."""
    proc = subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"scripts/postgres {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


def run_dir() -> Path:
    """The directory of this run's server (made by `begin_run`)."""
    value = os.environ.get(PG_DIR_VARIABLE)
    assert value, f"{PG_DIR_VARIABLE} is unset: tests/conftest.py's pytest_configure sets it"
    return Path(value)


def begin_run() -> None:
    """In the controller (or the only process): name the run's server directory."""
    parent = os.environ.get(PG_PARENT_VARIABLE) or None
    os.environ[PG_DIR_VARIABLE] = tempfile.mkdtemp(prefix="tsm-test-pg-", dir=parent)
    os.environ[PG_OWNER_VARIABLE] = str(os.getpid())


def finish_run() -> None:
    """In the controller, after every worker is done: stop the server, remove its dir."""
    directory = os.environ.pop(PG_DIR_VARIABLE, None)
    if not directory:
        return
    if (Path(directory) / "data").exists():
        stop = subprocess.run([str(SCRIPT), "stop", directory], stdin=subprocess.DEVNULL)
        if stop.returncode != 0:  # keep its data dir: a server may still be running on it
            print(f"tests/pg.py: the test server in {directory} did not stop", file=sys.stderr)
            return
    shutil.rmtree(directory, ignore_errors=True)


def start(directory: Path) -> PgServer:
    """Start (or find running) the server in `directory`; fsync off: it is thrown away. The
    first to start it also starts its watcher."""
    url = script("start", str(directory), "--no-fsync")
    try:
        os.close(os.open(directory / "watched", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:
        owner = os.environ.get(PG_OWNER_VARIABLE, str(os.getpid()))
        subprocess.Popen(
            [sys.executable, __file__, "watch", owner, str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C or kill of the run's group spares it
        )
    return PgServer(directory, url, script("url", str(directory), "--password"))


def watch(owner: int, directory: Path, interval: float = 1.0) -> None:
    """Until `directory` is gone (finish_run removed it): when the process `owner` has
    ended without removing it, stop the server there and remove it."""
    while directory.exists():
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            stop = subprocess.run([str(SCRIPT), "stop", str(directory)], stdin=subprocess.DEVNULL)
            if stop.returncode == 0:  # else keep the data dir of a server that may still run
                shutil.rmtree(directory, ignore_errors=True)
            return
        time.sleep(interval)


_admin: dict[str, Any] = {}  # one superuser connection per server and process


def admin(server: PgServer) -> Any:
    """An autocommit connection to `postgres` as the superuser, kept for the process
    (CREATE/DROP DATABASE need autocommit; a new connection per test would cost more)."""
    import psycopg

    conn = _admin.get(server.url)
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(server.database_url("postgres"), autocommit=True)
        _admin[server.url] = conn
    return conn


def create_database(server: PgServer, name: str, template: str = "template1") -> str:
    """A new database `name`, a copy of `template` (template1 has pgvector: scripts/postgres
    puts it there); its URL. FILE_COPY: ~30 ms for a small database with fsync off, about
    two thirds of the default WAL_LOG strategy's time."""
    admin(server).execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
    return server.database_url(name)


def drop_database(server: PgServer, name: str) -> None:
    """Drop `name`, ending the sessions a test's daemon may still hold on it."""
    admin(server).execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_exists(server: PgServer, name: str) -> bool:
    row = admin(server).execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
    return row.fetchone() is not None


@contextmanager
def fresh_database(server: PgServer, template: str = "template1") -> Iterator[str]:
    """A database `t_<random>` for one test (or module), dropped afterwards; yields its URL."""
    name = f"t_{secrets.token_hex(6)}"
    url = create_database(server, name, template)
    try:
        yield url
    finally:
        drop_database(server, name)


class Stores:
    """Where a test's tsm processes keep their index: SQLite files under the index root (the
    environment adds nothing), or with TSM_TEST_STORE=postgres a database of their own on
    the run's server (the environment adds TSM_STORE_URL)."""

    def __init__(self, server: PgServer | None, sample: str = SAMPLE_DATABASE) -> None:
        self.server = server
        self.sample = sample  # the database the sample vault is indexed into
        self.bound: dict[tuple[str, str], dict[str, str]] = {}  # (module, fixture): its store

    @contextmanager
    def for_fixture(self, module: str, fixture: str) -> Iterator[dict[str, str]]:
        """The store of a module- or session-scoped fixture that indexes a vault of its own:
        every test that uses `fixture` (in `module`) gets it instead of an empty one
        (`bound_to`), so the test's tsm processes find that index."""
        with self.fresh() as env:
            self.bound[module, fixture] = env
            try:
                yield env
            finally:
                del self.bound[module, fixture]

    def bound_to(self, module: str, fixtures: Iterable[str]) -> dict[str, str] | None:
        """The store `for_fixture` made for one of a test's `fixtures`, if any."""
        for fixture in fixtures:
            if (module, fixture) in self.bound:
                return self.bound[module, fixture]
        return None

    @contextmanager
    def fresh(self, template: str = "template1") -> Iterator[dict[str, str]]:
        """The environment of a new, empty index (or a copy of `template`'s), dropped after."""
        if self.server is None:
            yield {}
            return
        with fresh_database(self.server, template) as url:
            yield {"TSM_STORE_URL": url}

    def sample_copy(self) -> AbstractContextManager[dict[str, str]]:
        """The environment of a copy of the sample vault's index (`build_sample` made it)."""
        return self.fresh(self.sample)

    def fingerprint(self, env: dict[str, str]) -> dict[str, str]:
        """What the database of `env` holds: an md5 of each table's rows ({} on SQLite,
        where the files' fingerprint covers the index)."""
        if self.server is None or "TSM_STORE_URL" not in env:
            return {}
        import psycopg

        with psycopg.connect(env["TSM_STORE_URL"]) as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
            digest = "SELECT md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM "
            return {
                table: str(conn.execute(f'{digest} "{table}" r').fetchall()[0][0])
                for (table,) in tables
            }

    def reset_to_sample(self, env: dict[str, str]) -> None:
        """Make the database of `env` a fresh copy of the sample index's again."""
        if self.server is None or "TSM_STORE_URL" not in env:
            return
        name = urlsplit(env["TSM_STORE_URL"]).path.lstrip("/")
        drop_database(self.server, name)
        create_database(self.server, name, self.sample)

    def build_sample(self) -> dict[str, str]:
        """The environment `tsm index` builds the sample vault's index in, once per run."""
        if self.server is None:
            return {}
        drop_database(self.server, self.sample)  # a worker that failed half-way
        return {"TSM_STORE_URL": create_database(self.server, self.sample)}


if __name__ == "__main__":  # the watcher: python tests/pg.py watch PID DIR
    assert sys.argv[1] == "watch", sys.argv
    watch(int(sys.argv[2]), Path(sys.argv[3]))
