"""Many writers on one PostgreSQL store, and a server that fails under them:
real servers (scripts/postgres), the real CLI as subprocesses.

- Two `tsm index` at once on overlapping folders store each document once, exactly as one
  writer alone would, with no error, and a reader never sees half a document.
- A file edited while two writers index it ends with its last content.
- A server killed mid-index (or a session terminated, a query cancelled) is a system error
  (exit 2) in one line naming the store; the next `tsm index` completes the index.
- A wrong password, host or database is a user error (exit 1) naming the setting, and no
  output ever holds the password.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import psycopg
import pytest

from tsm.store.postgres.schema import MIGRATION_LOCK

pytestmark = pytest.mark.postgres

SECTIONS_PER_NOTE = 2  # each note below: an H1 and an H2 section, one chunk each


def note(name: str, version: int = 1) -> str:
    return (
        f"---\ntitle: {name} v{version}\ntags: [writers, w{len(name) % 7}]\n---\n"
        f"# {name}\n\nThe {name} note, version {version}, links [[shared-0001]].\n\n"
        f"## Details of {name}\n\nMore words about {name} in version {version}.\n"
    )


def make_vault(root: Path, folders: dict[str, int]) -> list[Path]:
    files = []
    for folder, count in folders.items():
        (root / folder).mkdir(parents=True)
        for i in range(count):
            path = root / folder / f"{folder.rsplit('/', 1)[-1]}-{i:04d}.md"
            path.write_text(note(path.stem))
            files.append(path)
    return files


def start_tsm(*args: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tsm", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
    )


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def snapshot(url: str) -> dict[str, Any]:
    """Everything the index holds about its documents, keyed by path (never by id, which
    differs between two stores that hold the same)."""
    with psycopg.connect(url) as conn:

        def rows(sql: str) -> list[tuple[Any, ...]]:
            return sorted(conn.execute(sql).fetchall())

        return {
            "documents": rows(
                """SELECT path, type, title, content_hash, size, mtime, category, status, created,
                          updated, doc_date, date_source, aliases, text FROM documents"""
            ),
            "chunks": rows(
                """SELECT d.path, c.chunk_index, c.section, c.text, c.embed_hash
                   FROM chunks c JOIN documents d ON d.id = c.document_id"""
            ),
            "keywords": rows(
                """SELECT d.path, c.chunk_index, k.terms, k.tokens
                   FROM chunk_keywords k JOIN chunks c ON c.id = k.chunk_id
                   JOIN documents d ON d.id = c.document_id"""
            ),
            "tags": rows(
                "SELECT d.path, t.tag FROM tags t JOIN documents d ON d.id = t.document_id"
            ),
            "links": rows(
                """SELECT d.path, l.target, l.link_type, l.target_key
                   FROM links l JOIN documents d ON d.id = l.document_id"""
            ),
            "names": rows(
                """SELECT d.path, n.name, n.kind
                   FROM names n JOIN documents d ON d.id = n.document_id"""
            ),
        }


def stored_text(url: str, path: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM documents WHERE path = %s", (path,))]


class HalfDocumentReader(threading.Thread):
    """Reads the store in a loop while writers run: every document it can see must have all
    its chunks and their keyword rows (each query is one snapshot)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.reads = 0
        self.half_seen: list[tuple[Any, ...]] = []

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.is_set():
                self.half_seen += conn.execute(
                    """SELECT d.path, count(c.id), count(k.chunk_id) FROM documents d
                       LEFT JOIN chunks c ON c.document_id = d.id
                       LEFT JOIN chunk_keywords k ON k.chunk_id = c.id
                       GROUP BY d.path HAVING count(c.id) <> %s OR count(k.chunk_id) <> %s""",
                    (SECTIONS_PER_NOTE, SECTIONS_PER_NOTE),
                ).fetchall()
                self.reads += 1


def test_two_writers_on_overlapping_folders_store_each_document_once(
    tmp_path: Path, pg_server: pg.PgServer
) -> None:
    root = tmp_path / "repo"
    files = make_vault(root, {"k/shared": 400, "k/alpha": 60, "k/beta": 60})
    with pg.fresh_database(pg_server) as url, pg.fresh_database(pg_server) as reference:
        env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": url}
        # the schema first, so that both writers start on their documents at the same time
        assert (
            finish(start_tsm("index", "--no-embed", "-f", "json", "k/alpha", env=env, cwd=root))[0]
            == 0
        )
        reader = HalfDocumentReader(url)
        reader.start()
        # both begin with the shared folder: they meet on each of its notes
        one = start_tsm(
            "index", "--no-embed", "-f", "json", "k/shared", "k/alpha", env=env, cwd=root
        )
        two = start_tsm(
            "index", "--no-embed", "-f", "json", "k/shared", "k/beta", env=env, cwd=root
        )
        results = [finish(one), finish(two)]
        reader.stop.set()
        reader.join()
        for code, _, err in results:
            assert (code, err) == (0, ""), err
        reports = [json.loads(out) for _, out, _ in results]
        # each new document was written by exactly one of them
        assert sum(r["indexed"] for r in reports) == len(files) - 60
        assert reader.reads > 0 and reader.half_seen == []

        alone = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": reference}
        assert finish(start_tsm("index", "--no-embed", "-f", "json", env=alone, cwd=root))[0] == 0
        got, want = snapshot(url), snapshot(reference)
    assert len(got["documents"]) == len(files)
    assert len(got["chunks"]) == len(got["keywords"]) == SECTIONS_PER_NOTE * len(files)
    on_disk = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    assert {d[0]: d[3] for d in got["documents"]} == on_disk
    assert got == want  # row for row what one writer alone stores


def test_writers_opening_a_new_database_at_once_create_its_schema_once(
    tmp_path: Path, pg_url: str
) -> None:
    """Three machines' first `tsm index` on an empty database: one migrates, the others
    wait for it and find the schema made (not "relation ... already exists"). The test
    holds the migration lock until all three wait for it, so they meet for sure."""
    root = tmp_path / "repo"
    files = make_vault(root, {"k/shared": 30})
    env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": pg_url}
    with psycopg.connect(pg_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        procs = [start_tsm("index", "--no-embed", "-f", "json", env=env, cwd=root) for _ in "abc"]
        wait_for_waiters(holder, 3, *procs)
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    for code, _, err in map(finish, procs):
        assert (code, err) == (0, ""), err
    assert count_documents(pg_url) == len(files)


def test_two_writers_embedding_at_once_store_one_vector_per_text(
    tmp_path: Path, pg_url: str
) -> None:
    """The vector backfill of two machines: both embed the same new texts (the real model)
    and upsert them; each text ends with exactly one vector and none is left without."""
    root = tmp_path / "repo"
    files = make_vault(root, {"k/shared": 24, "k/alpha": 4, "k/beta": 4})
    env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": pg_url}
    assert (
        finish(start_tsm("index", "--no-embed", "-f", "json", "k/alpha", env=env, cwd=root))[0] == 0
    )
    one = start_tsm("index", "-f", "json", "k/shared", "k/alpha", env=env, cwd=root)
    two = start_tsm("index", "-f", "json", "k/shared", "k/beta", env=env, cwd=root)
    for code, _, err in (finish(one), finish(two)):
        assert (code, err) == (0, ""), err
    with psycopg.connect(pg_url) as conn:
        (docs,) = conn.execute("SELECT count(*) FROM documents").fetchone()
        (texts,) = conn.execute("SELECT count(DISTINCT embed_hash) FROM chunks").fetchone()
        (vectors, per_text) = conn.execute(
            "SELECT count(*), count(DISTINCT (model, embed_hash)) FROM embeddings"
        ).fetchone()
        (missing,) = conn.execute(
            """SELECT count(*) FROM chunks c WHERE NOT EXISTS (
                   SELECT 1 FROM embeddings e WHERE e.embed_hash = c.embed_hash)"""
        ).fetchone()
    assert docs == len(files)
    assert (missing, vectors, per_text) == (0, texts, texts)


def test_a_vector_that_another_writers_new_chunk_needs_is_not_dropped(
    tmp_path: Path, pg_url: str
) -> None:
    """Writer B (no embedding) stores a note whose first section's text already has a
    vector, left by a note removed before; while B's transaction is open, writer A embeds
    and drops unused vectors. A must wait for B rather than drop the vector B's chunk needs
    (B would then count on a vector that is gone)."""
    root = tmp_path / "repo"
    (root / "k" / "empty").mkdir(parents=True)
    env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": pg_url}
    body = "---\ntitle: Moved\n---\n# Moved\n\nThe section that keeps its vector.\n\n## Rest\n\n"
    (root / "k" / "x.md").write_text(body + "The old rest.\n")
    assert finish(start_tsm("index", "k", env=env, cwd=root))[0] == 0  # with vectors
    (root / "k" / "x.md").unlink()
    assert finish(start_tsm("index", "--no-embed", "k", env=env, cwd=root))[0] == 0
    (root / "k" / "y.md").write_text(body + "A new rest.\n")

    with psycopg.connect(pg_url) as holder:  # keeps B's transaction open, its chunks written
        holder.execute("LOCK TABLE names IN EXCLUSIVE MODE")
        b = start_tsm("index", "--no-embed", "-f", "json", "k/y.md", env=env, cwd=root)
        wait_for_waiters(holder, 1, b)
        a = start_tsm("index", "-f", "json", "k/empty", env=env, cwd=root)  # embeds, cleans up
        deadline = time.monotonic() + 300
        while a.poll() is None and waiting(holder) < 2:  # A waits for B, or (wrongly) ends
            assert time.monotonic() < deadline, "writer A neither waited nor ended"
            time.sleep(0.05)
        holder.rollback()
    for code, _, err in (finish(b), finish(a)):
        assert (code, err) == (0, ""), err
    with psycopg.connect(pg_url) as conn:
        kept = conn.execute(
            """SELECT c.section, count(e.embed_hash) FROM chunks c
               LEFT JOIN embeddings e ON e.embed_hash = c.embed_hash
               GROUP BY c.section ORDER BY c.section"""
        ).fetchall()
    assert kept == [("Moved", 1), ("Moved > Rest", 0)]  # the new text waits for an embed run


def test_a_file_edited_while_two_writers_index_it_ends_with_its_last_content(
    tmp_path: Path, pg_url: str
) -> None:
    """Writer A reads the file, then the file is edited and writer B stores the new content
    while A is still tokenizing the old one (A is stopped there); A, resumed, must not
    overwrite B's newer content with what it read."""
    root = tmp_path / "repo"
    (root / "k").mkdir(parents=True)
    env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": pg_url}
    (root / "k" / "first.md").write_text(note("first"))
    assert finish(start_tsm("index", "--no-embed", "k", env=env, cwd=root))[0] == 0
    edited = root / "k" / "edited.md"
    old = "# Old\n\n" + "An old paragraph about many things, long to tokenize.\n\n" * 4000
    edited.write_text(old)
    written = edited.stat().st_atime_ns

    a = start_tsm("index", "--no-embed", "-f", "json", "k/edited.md", env=env, cwd=root)
    try:
        deadline = time.monotonic() + 120
        while edited.stat().st_atime_ns == written:  # relatime: the first read after a write
            assert a.poll() is None and time.monotonic() < deadline, "A never read the file"
            time.sleep(0.001)
        os.kill(a.pid, signal.SIGSTOP)  # A holds the old bytes and is tokenizing them
        new = "# New\n\nThe last content.\n"
        fresh = edited.with_suffix(".tmp")
        fresh.write_text(new)
        fresh.replace(edited)
        b = start_tsm("index", "--no-embed", "-f", "json", "k/edited.md", env=env, cwd=root)
        code, _, err = finish(b)
        assert (code, err) == (0, ""), err
        assert stored_text(pg_url, "k/edited.md") == [new]  # B stored it; A has not yet
    finally:
        os.kill(a.pid, signal.SIGCONT)
    code, out, err = finish(a)
    assert (code, err) == (0, ""), err
    assert stored_text(pg_url, "k/edited.md") == [new]
    assert json.loads(out)["indexed"] == 0  # A found the file changed, and B's row current


def indexed_target(tmp_path: Path, pg_url: str) -> tuple[Path, Path, dict[str, str]]:
    """A root whose k/target.md (version 1) is indexed: the root, the file, the CLI's env."""
    root = tmp_path / "repo"
    (root / "k").mkdir(parents=True)
    target = root / "k" / "target.md"
    target.write_text(note("target", 1))
    env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": pg_url}
    assert finish(start_tsm("index", "--no-embed", "k", env=env, cwd=root))[0] == 0
    return root, target, env


def test_a_file_written_by_two_writers_at_once_is_stored_once(tmp_path: Path, pg_url: str) -> None:
    """Both writers reach the same stored document at the same moment (a row lock held by
    the test keeps the first one at it until the second has read the newer file): neither
    fails on the other's row, and the newer content is what stays."""
    root, target, env = indexed_target(tmp_path, pg_url)
    target.write_text(note("target", 2) + "\nA second version.\n")

    with psycopg.connect(pg_url) as holder:  # a transaction: FOR UPDATE holds the row
        holder.execute("SELECT id FROM documents WHERE path = 'k/target.md' FOR UPDATE")
        a = start_tsm("index", "--no-embed", "-f", "json", "k/target.md", env=env, cwd=root)
        wait_for_waiters(holder, 1, a)
        target.write_text(note("target", 3) + "\nThe third and last version.\n")
        b = start_tsm("index", "--no-embed", "-f", "json", "k/target.md", env=env, cwd=root)
        wait_for_waiters(holder, 2, a, b)  # B has read the last version, and waits too
        holder.rollback()
    results = [finish(a), finish(b)]
    for code, _, err in results:
        assert (code, err) == (0, ""), err
    assert stored_text(pg_url, "k/target.md") == [target.read_text()]


def test_a_file_is_read_again_once_its_path_is_held(tmp_path: Path, pg_url: str) -> None:
    """A writer checks that the file still holds what it read only once it holds the path:
    checked before the server granted the lock, the check passed on bytes that another
    writer's turn then made old, and the older content was stored over the file's."""
    root, target, env = indexed_target(tmp_path, pg_url)
    target.write_text(note("target", 2) + "\nA second version.\n")

    with psycopg.connect(pg_url) as holder:  # another writer's turn on the path
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('k/target.md', 0))")
        a = start_tsm("index", "--no-embed", "-f", "json", "k/target.md", env=env, cwd=root)
        wait_for_waiters(holder, 1, a)  # A has read the second version, and waits for the path
        target.write_text(note("target", 3) + "\nThe third and last version.\n")
        holder.rollback()
    code, _, err = finish(a)
    assert (code, err) == (0, ""), err
    assert stored_text(pg_url, "k/target.md") == [target.read_text()]


def test_a_file_that_comes_back_while_its_path_is_held_stays_indexed(
    tmp_path: Path, pg_url: str
) -> None:
    """A writer that found a file gone looks for it again only once it holds the path: it
    came back meanwhile (another writer's turn), so its document stays."""
    root, target, env = indexed_target(tmp_path, pg_url)
    aside = root / "target.md.aside"
    target.replace(aside)

    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('k/target.md', 0))")
        a = start_tsm("index", "--no-embed", "-f", "json", "k", env=env, cwd=root)
        wait_for_waiters(holder, 1, a)  # A found the file gone, and waits for the path
        aside.replace(target)
        holder.rollback()
    code, out, err = finish(a)
    assert (code, err) == (0, ""), err
    assert json.loads(out)["removed"] == 0
    assert stored_text(pg_url, "k/target.md") == [target.read_text()]


def waiting(conn: psycopg.Connection[Any]) -> int:
    """How many other sessions on this database wait for a lock (pg_locks shows every
    database's: other tests run beside this one). pg_stat_activity is read afresh: inside a
    transaction it would stay as first read."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    (count,) = conn.execute(
        """SELECT count(DISTINCT l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE NOT l.granted AND l.pid <> pg_backend_pid() AND a.datname = current_database()"""
    ).fetchone()
    return int(count)


def wait_for_waiters(conn: psycopg.Connection[Any], count: int, *procs: Any) -> None:
    """Until `count` other sessions wait for a lock (or a process exits, which fails)."""
    deadline = time.monotonic() + 120
    while True:
        if waiting(conn) >= count:
            return
        for proc in procs:
            assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no writer came to wait for the row"
        time.sleep(0.02)


# --- a server that goes away ---------------------------------------------------------------


@pytest.fixture
def own_server() -> Iterator[pg.PgServer]:
    """A server of this test's own, to kill (the run's server serves other tests). Under
    /tmp, not tmp_path: as root the server runs as another user, who must reach it."""
    directory = Path(tempfile.mkdtemp(prefix="tsm-test-pg-kill-"))
    try:
        yield pg.start(directory)
    finally:
        subprocess.run(
            [str(pg.SCRIPT), "stop", str(directory)], stdin=subprocess.DEVNULL, check=False
        )
        shutil.rmtree(directory, ignore_errors=True)


def postmaster_pid(server: pg.PgServer) -> int:
    return int((server.dir / "data" / "postmaster.pid").read_text().split()[0])


def wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"the killed server (pid {pid}) did not exit")


def count_documents(url: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def index_until_some_documents(root: Path, url: str) -> subprocess.Popen[str]:
    """A `tsm index` started on the vault, once it has committed some documents."""
    proc = start_tsm("index", "--no-embed", "-f", "json", env=_env(root, url), cwd=root)
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, "tsm index ended before it could be interrupted"
        assert time.monotonic() < deadline
        try:
            if count_documents(url) >= 50:
                return proc
        except psycopg.errors.UndefinedTable:
            pass  # not migrated yet
        time.sleep(0.05)


def _env(root: Path, url: str) -> dict[str, str]:
    return {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": url}


def assert_one_line_system_error(code: int, err: str, url: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    error = json.loads(lines[0])
    assert error["kind"] == "system_error"
    assert url in error["error"]  # names the store (a URL without password here)
    return str(error["error"])


def test_a_server_killed_mid_index_is_a_system_error_and_the_next_run_completes(
    tmp_path: Path, own_server: pg.PgServer
) -> None:
    root = tmp_path / "repo"
    files = make_vault(root, {"k/notes": 1500})
    url = pg.create_database(own_server, "killed")
    proc = index_until_some_documents(root, url)
    postmaster = postmaster_pid(own_server)
    os.kill(postmaster, signal.SIGQUIT)  # what `pg_ctl stop -m immediate` sends
    code, _, err = finish(proc)
    message = assert_one_line_system_error(code, err, url)
    assert message.startswith("lost the connection to the PostgreSQL store at ")

    wait_until_gone(postmaster)
    restarted = pg.start(own_server.dir)
    assert restarted.url == own_server.url  # the same port again: the URL still holds
    done = _tsm_index(root, url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    report = json.loads(done.stdout)
    assert report["indexed"] + report["unchanged"] == len(files)
    assert count_documents(url) == len(files)


def _tsm_index(root: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, **_env(root, url)},
        timeout=300,
    )


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("pg_terminate_backend", "lost the connection to the PostgreSQL store at "),
        ("pg_cancel_backend", "a query on the PostgreSQL store at "),
    ],
)
def test_a_session_ended_or_a_query_cancelled_by_an_admin_is_a_system_error(
    tmp_path: Path, pg_url: str, how: str, says: str
) -> None:
    root = tmp_path / "repo"
    files = make_vault(root, {"k/notes": 1500})
    proc = index_until_some_documents(root, pg_url)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        while proc.poll() is None:  # a cancel only stops a statement that is running
            admin.execute(
                f"""SELECT {how}(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid()"""
            )
            time.sleep(0.01)
    code, _, err = finish(proc)
    assert assert_one_line_system_error(code, err, pg_url).startswith(says)
    done = _tsm_index(root, pg_url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert count_documents(pg_url) == len(files)


def test_a_search_whose_store_fails_mid_query_is_a_one_line_system_error(
    tmp_path: Path, pg_url: str
) -> None:
    """The search's keyword statement is running (waiting on a lock an admin holds) when its
    session is terminated: one line naming the store, exit 2, nothing on stdout."""
    root = tmp_path / "repo"
    make_vault(root, {"k/notes": 20})
    done = _tsm_index(root, pg_url)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(pg_url) as admin:  # a transaction: the lock holds until it ends
        admin.execute("LOCK TABLE keyword_postings IN ACCESS EXCLUSIVE MODE")
        proc = start_tsm(
            "search", "writers note", "--fts-only", "-f", "json", env=_env(root, pg_url), cwd=root
        )
        with psycopg.connect(pg_url, autocommit=True) as watcher:
            deadline = time.monotonic() + 120
            while True:
                waiting = watcher.execute(
                    """SELECT pid FROM pg_stat_activity
                       WHERE datname = current_database() AND wait_event_type = 'Lock'
                       AND query LIKE '%%keyword_postings%%'"""
                ).fetchone()
                if waiting:
                    break
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the search never reached the keywords"
                time.sleep(0.02)
            watcher.execute("SELECT pg_terminate_backend(%s)", waiting)
        code, out, err = finish(proc)
        admin.rollback()
    assert_one_line_system_error(code, err, pg_url)
    assert out == ""


# --- a wrong URL ---------------------------------------------------------------------------


def _wrong_urls(server: pg.PgServer) -> dict[str, tuple[str, str]]:
    """name: (URL, its password), each with a password that must never be shown."""
    right = server.password_url
    secret = right.split(":")[2].split("@")[0]
    wrong = "Wr0ng-Secret-4711"
    port = right.split(":")[3].split("/")[0]
    return {
        "wrong password": (right.replace(f":{secret}@", f":{wrong}@"), wrong),
        "wrong password in the query": (
            right.replace(f":{secret}@", "@") + f"?password={wrong}",
            wrong,
        ),
        "unknown host": (f"postgresql://tsm:{wrong}@no-such-host.invalid:5432/tsm", wrong),
        "wrong database": (
            f"postgresql://{pg.PASSWORD_ROLE}:{secret}@127.0.0.1:{port}/no_such_db",
            secret,
        ),
    }


def _tsm(root: Path, url: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """The real CLI on the vault at `root` with its store at `url`."""
    return subprocess.run(
        [sys.executable, "-m", "tsm", *args],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, **_env(root, url)},
        timeout=120,
    )


@pytest.mark.parametrize(
    "case", ["wrong password", "wrong password in the query", "unknown host", "wrong database"]
)
@pytest.mark.parametrize("fmt", ["json", "human"])
def test_a_wrong_url_is_a_one_line_user_error_naming_the_setting(
    tmp_path: Path, pg_server: pg.PgServer, case: str, fmt: str
) -> None:
    url, password = _wrong_urls(pg_server)[case]
    root = tmp_path / "repo"
    make_vault(root, {"k": 3})
    for command in (["index", "--no-embed"], ["search", "notes"], ["status"]):
        proc = _tsm(root, url, [*command, "-f", fmt])
        assert proc.returncode == 1, (command, proc.stderr)
        assert password not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        if fmt == "json":
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1, proc.stderr
            error = json.loads(lines[0])
            assert error["kind"] == "user_error"
            message = error["error"]
        else:
            message, *hint = proc.stderr.strip().splitlines()
            assert len(hint) <= 1 and all(h.lstrip().startswith("hint:") for h in hint)
        assert "store.url" in message and "TSM_STORE_URL" in message, message


# A password as generated passwords are: with a character a URL reserves, written unencoded.
# libpq and urlsplit each read such a URL their own way, and both quote the part they choke
# on; no piece of the password may show, in any command's output.
_RAW_PASSWORDS = {
    "an @": "Secr3t@Vault-4711",
    "a /": "Secr3t/Vault-4711",
    "a / after digits (a valid port to urlsplit)": "4711/Secr3tVault",
    "a ?": "Secr3t?Vault-4711",
    "a #": "Secr3t#Vault-4711",
    "a %": "Secr3t%zzVault-4711",
    "a space": "Secr3t Vault-4711",
}


@pytest.mark.parametrize("where", ["user part", "query"])
@pytest.mark.parametrize("case", list(_RAW_PASSWORDS))
def test_a_password_with_a_reserved_character_is_never_shown(
    tmp_path: Path, pg_server: pg.PgServer, case: str, where: str
) -> None:
    password = _RAW_PASSWORDS[case]
    port = pg_server.password_url.split(":")[3].split("/")[0]
    url = (
        f"postgresql://{pg.PASSWORD_ROLE}:{password}@127.0.0.1:{port}/tsm"
        if where == "user part"
        else f"postgresql://{pg.PASSWORD_ROLE}@127.0.0.1:{port}/tsm?password={password}"
    )
    pieces = [p for p in re.split(r"[@/?#% ]", password) if len(p) >= 4]
    root = tmp_path / "repo"
    make_vault(root, {"k": 1})
    for command in (["index", "--no-embed"], ["status"], ["doctor"]):
        for fmt in ("json", "human"):
            proc = _tsm(root, url, [*command, "-f", fmt])
            shown = proc.stdout + proc.stderr
            assert proc.returncode in (1, 2) and "Traceback" not in shown, (command, shown)
            assert not [p for p in pieces if p in shown], (command, fmt, shown)


def test_doctor_s_fix_for_unused_vectors_removes_them(tmp_path: Path, pg_url: str) -> None:
    """`index --no-embed` after files were deleted leaves their vectors unused; doctor's fix,
    followed as written, removes them. (It offered `tsm export` then `tsm import --replace`
    too, but an export carries every stored vector, so that brought them all back.)"""
    root = tmp_path / "repo"
    files = make_vault(root, {"k": 3})
    env = {**_env(root, pg_url), "TSM_EMBEDDER": "fake:8", "TSM_AUTOSTART": "0"}

    def tsm(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tsm", *args, "-f", "json"],
            capture_output=True,
            text=True,
            cwd=root,
            env={**os.environ, **env},
            timeout=300,
        )

    def orphans() -> dict[str, Any] | None:
        report = json.loads(tsm("doctor").stdout)
        items = [i for s in report["sections"] for i in s["items"] if i["name"] == "orphans"]
        return items[0] if items and items[0]["status"] != "ok" else None

    assert tsm("index").returncode == 0
    for path in files[:2]:
        path.unlink()
    assert tsm("index", "--no-embed").returncode == 0
    found = orphans()
    assert found is not None and "vectors belong to no chunk" in found["message"], found
    assert "export" not in found["fix"], found["fix"]
    exported = tmp_path / "index.tsmx"
    assert tsm("export", str(exported)).returncode == 0
    assert tsm("import", "--replace", str(exported)).returncode == 0
    assert orphans() is not None  # what the old advice did: nothing
    assert "`tsm index`" in found["fix"]
    assert tsm("index").returncode == 0
    assert orphans() is None
