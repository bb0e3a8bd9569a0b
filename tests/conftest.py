"""Shared fixtures: every test gets its own index root and state dir, the real CLI run as a
subprocess, and a copy of the sample vault (its tracked files only: see sample_vault.py).

The sample vault is indexed with the real model once per session (`sample_index_template`):
`indexed` gives a test its own copy to change, `indexed_read_only` shares one copy between
the tests that only read it.

`TSM_TEST_STORE=postgres` runs the same tests with the index in PostgreSQL: each test's tsm
processes get TSM_STORE_URL, a database of their own on the run's server (tests/pg.py);
`indexed` and `indexed_read_only` then get a copy of the sample index's database too.
`pg_server` and `pg_url` give tests marked `postgres` the server and a fresh database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# The suite's profile: a property never fails because the machine is busy (no deadline, no
# "data generation too slow" check), and a failure prints the blob that replays it.
# TSM_HYPOTHESIS_PROFILE=default gives hypothesis's own settings back.
hypothesis_settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
hypothesis_settings.load_profile(os.environ.get("TSM_HYPOTHESIS_PROFILE", "ci"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pg  # noqa: E402
from isolation import FIXED_NOW, isolated_environ  # noqa: E402
from patience import scaled  # noqa: E402
from sample_vault import copy_tracked, fingerprint  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    """One cache dir for the whole run, never the developer's ~/.cache (nor its
    ~/.local/state): the converted embedding graph and the bilingual lexicon are built
    once per run, not once per test.
    Parallel workers (pytest-xdist) inherit the controller's, which removes it at the end."""
    import tempfile

    try:
        pg.store_under_test()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if hasattr(config, "workerinput"):
        return  # an xdist worker: XDG_CACHE_HOME came from the controller's environment
    config._tsm_cache = tempfile.mkdtemp(prefix="tsm-test-cache-")  # type: ignore[attr-defined]
    os.environ["XDG_CACHE_HOME"] = config._tsm_cache  # type: ignore[attr-defined]
    # One "user on this machine" for the run: the key that seals the indexes tsm makes
    # (store/provenance.py), so an index copied from the sample template is still ours.
    os.environ["XDG_STATE_HOME"] = os.path.join(config._tsm_cache, "state")  # type: ignore[attr-defined]
    pg.begin_run()  # the workers start the server there when a test needs it
    config._tsm_pg = True  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = getattr(config, "_tsm_cache", None)
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
    if getattr(config, "_tsm_pg", False):
        pg.finish_run()  # the controller outlives the workers: no server is left running


STORE = os.environ.get(pg.STORE_VARIABLE) or "sqlite"  # checked by pytest_configure


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the server is a `postgres` test (`-m "not postgres"` leaves it out).
    A test about the SQLite file itself (`@pytest.mark.sqlite_only("why")`) is skipped, with
    its reason shown, when the run's store is PostgreSQL."""
    for item in items:
        if {"pg_server", "pg_url"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)
        marker = item.get_closest_marker("sqlite_only")
        if STORE == "postgres" and marker is not None:
            why = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {why}"))


@pytest.fixture(scope="session")
def pg_server() -> pg.PgServer:
    """The run's PostgreSQL server with pgvector (scripts/postgres), shared by the workers."""
    return pg.start(pg.run_dir())


@pytest.fixture
def pg_url(pg_server: pg.PgServer) -> Iterator[str]:
    """A new database t_<random> with pgvector for this test, dropped after it."""
    with pg.fresh_database(pg_server) as url:
        yield url


@pytest.fixture(scope="session")
def stores(request: pytest.FixtureRequest) -> pg.Stores:
    """SQLite files, or (TSM_TEST_STORE=postgres) databases on the run's server."""
    if STORE != "postgres":
        return pg.Stores(None)
    return pg.Stores(request.getfixturevalue("pg_server"))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's config or writes outside tmp_path."""
    for key in list(os.environ):
        if key.startswith("TSM_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TSM_NO_USER_CONFIG", "1")
    monkeypatch.setenv("TSM_AUTOSTART", "0")  # tests that want a daemon start one themselves
    monkeypatch.setenv("TSM_NOW", FIXED_NOW)  # dates and recency never rot with the calendar
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    # Claude Code's folder (transcripts under projects/): `ingest-session` reads only there
    # or in a sessions folder, and no test reads the developer's own.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    yield


# Fixtures that give the test's processes a copy of the sample index's store themselves.
_OWN_STORE = {"indexed", "indexed_read_only", "sample_store", "harness", "daemon"}


@pytest.fixture(autouse=True)
def test_store_url(
    isolated_env: None,
    stores: pg.Stores,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[None]:
    """With TSM_TEST_STORE=postgres, every tsm process of the test indexes into a database
    of the test's own (TSM_STORE_URL), dropped after it; or, when the test uses a module's
    fixture that indexed a vault of its own (`stores.for_fixture`), into that fixture's."""
    if stores.server is None or _OWN_STORE & set(request.fixturenames):
        yield
        return
    bound = stores.bound_to(request.module.__name__, request.fixturenames)
    if bound is not None:
        for key, value in bound.items():
            monkeypatch.setenv(key, value)
        yield
        return
    with stores.fresh() as env:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        yield


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/vault as the index root (TSM_INDEX_ROOT points at it)."""
    root = copy_tracked(tmp_path / "vault")
    monkeypatch.setenv("TSM_INDEX_ROOT", str(root))
    return root


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, Any]:
        lines = [line for line in self.err.splitlines() if line.startswith("{")]
        assert len(lines) == 1, self.err
        return json.loads(lines[0])


Tsm = Callable[..., CliResult]


@pytest.fixture
def tsm(tmp_path: Path) -> Tsm:
    """Run the real CLI (`python -m tsm`) in a subprocess with the test's environment;
    `timeout` is a hang guard on an idle machine (stretched by the load: patience.scaled)."""

    def run(
        *args: str,
        input: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 300,
    ) -> CliResult:
        full_env = {**os.environ, **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "tsm", *args],
            input=input,
            capture_output=True,
            text=True,
            cwd=cwd or tmp_path,
            env=full_env,
            timeout=scaled(timeout),
        )
        return CliResult(proc)

    return run


@pytest.fixture(scope="session")
def sample_index_template(tmp_path_factory: pytest.TempPathFactory, stores: pg.Stores) -> Path:
    """The sample vault indexed once with the real default model; only ever copied from
    (on PostgreSQL, its index is the database pg.SAMPLE_DATABASE: `stores.sample_copy()`).

    Parallel workers (pytest-xdist) share one: the first to need it builds it in the run's
    base temp dir while holding a lock, the others wait for it and reuse it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _index_sample_vault(tmp_path_factory.mktemp("sample-index"), stores)
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent / "sample-index"  # one per run
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "built").is_file():
            shutil.rmtree(shared, ignore_errors=True)  # a worker that failed half-way
            shared.mkdir()
            _index_sample_vault(shared, stores)
            (shared / "built").touch()
    return shared / "vault"


def _index_sample_vault(base: Path, stores: pg.Stores) -> Path:
    root = copy_tracked(base / "vault")
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", "index", "-f", "json"],
        env={**isolated_environ(base), **stores.build_sample(), "TSM_INDEX_ROOT": str(root)},
        cwd=base,
        capture_output=True,
        text=True,
        timeout=scaled(600),
    )
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture
def sample_store(sample_index_template: Path, stores: pg.Stores) -> Iterator[dict[str, str]]:
    """For a test that copies sample_index_template itself: what its processes' environment
    adds, {} on SQLite (the copied .tsm holds the index), TSM_STORE_URL on PostgreSQL (a
    copy of the sample's database, dropped after the test)."""
    with stores.sample_copy() as env:
        yield env


@pytest.fixture
def indexed(
    vault: Path,
    sample_index_template: Path,
    stores: pg.Stores,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """The sample vault indexed with the real default embedding model, this test's own copy
    (on PostgreSQL, of its database too).

    The copies of the notes keep their mtimes, so the copied index sees them as unchanged."""
    shutil.copytree(sample_index_template / ".tsm", vault / ".tsm")
    with stores.sample_copy() as env:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        yield vault


@pytest.fixture(scope="session")
def shared_index_root(
    sample_index_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    root = tmp_path_factory.mktemp("shared-index") / "vault"
    shutil.copytree(sample_index_template, root)
    return root


@pytest.fixture(scope="session")
def shared_store(sample_index_template: Path, stores: pg.Stores) -> Iterator[dict[str, str]]:
    """The store of shared_index_root: its SQLite file, or a copy of the sample database."""
    with stores.sample_copy() as env:
        yield env


@pytest.fixture
def indexed_read_only(
    shared_index_root: Path,
    shared_store: dict[str, str],
    stores: pg.Stores,
    sample_index_template: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Path]:
    """The indexed sample vault shared by every test that only reads it (TSM_INDEX_ROOT
    points at it). A test that changes a note or the index (on PostgreSQL, a row of its
    database) fails here: it needs `indexed`."""
    before = fingerprint(shared_index_root), stores.fingerprint(shared_store)
    monkeypatch.setenv("TSM_INDEX_ROOT", str(shared_index_root))
    for key, value in shared_store.items():
        monkeypatch.setenv(key, value)
    yield shared_index_root
    if (fingerprint(shared_index_root), stores.fingerprint(shared_store)) != before:
        shutil.rmtree(shared_index_root)  # the next tests get it as it was
        shutil.copytree(sample_index_template, shared_index_root)
        stores.reset_to_sample(shared_store)
        pytest.fail("this test changed the shared index: use the `indexed` fixture")
