"""Indexing with worker processes (indexing_pool.py): the same index as one process, small
runs without a pool, hostile files skipped alike, Ctrl-C leaving a consistent index."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.patience import scaled
from tsm.indexing_pool import START_AFTER

pytestmark = pytest.mark.sqlite_only("compares SQLite index files row by row")

JA = "狩猟免許を取得して、鹿の罠を作った。センサー・モジュールで捕獲を報告する。"
EN = "The LoRa tracker reports each capture; batteries last a season in the field."


def _vault(root: Path, notes: int) -> Path:
    root.mkdir()
    for n in range(notes):
        body = JA * (30 + n % 7) + EN  # Japanese enough to be worth a worker
        (root / f"note-{n:03d}.md").write_text(
            f"---\ntitle: note {n}\ntags: [field, n{n % 5}]\n---\n# Note {n}\n\n{body}\n\n"
            f"## Part\n\n{EN if n % 2 else JA}\nSee [[note-{(n + 1) % notes:03d}]].\n",
            encoding="utf-8",
        )
    (root / "plain.txt").write_text(JA + "\n" + EN, encoding="utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")  # cannot parse
    (root / "latin1.md").write_bytes("caf\xe9 na\xefve".encode("latin-1"))  # not UTF-8
    (root / "huge.md").write_bytes(b"x" * (2 * 1024 * 1024))  # over TSM_MAX_FILE_MB
    outside = root.parent / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    (root / "link-out.md").symlink_to(outside)  # a link out of the root
    return root


@contextmanager
def _sigint_as_at_a_terminal() -> Iterator[None]:
    """A suite started in the background (`&` in a script, nohup) hands its children SIGINT
    ignored, and Python keeps an ignored SIGINT ignored: a run started here gets it as at a
    terminal, so that Ctrl-C reaches it and only its pool's workers ignore SIGINT (what
    _workers_of tells them by from a child of subprocess that has not exec'd yet)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _index(root: Path, state: Path, workers: int, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "TSM_INDEX_ROOT": str(root),
        "TSM_STATE_DIR": str(state),
        "TSM_INDEX_WORKERS": str(workers),
        "TSM_MAX_FILE_MB": "1",
    }
    with _sigint_as_at_a_terminal():
        return subprocess.Popen(
            [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json", *args],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def _watched(proc: subprocess.Popen[str], *, forked: bool | None = None) -> set[int]:
    """The worker processes the run started, seen while it ran."""
    started: set[int] = set()
    while proc.poll() is None:
        started.update(_workers_of(proc.pid, forked=forked))
        time.sleep(0.01)
    return started


def _report(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=scaled(300))
    assert proc.returncode == 0, err
    report = json.loads(out)
    report.pop("took_ms")
    return report


def _rows(db: Path) -> dict[str, list[tuple]]:
    """Every row that a search reads, without the clocks of the run that wrote them."""
    with sqlite3.connect(db) as conn:
        return {
            "documents": conn.execute(
                "SELECT id, path, type, title, content_hash, size, mtime, category, status, "
                "created, updated, doc_date, date_source, aliases, text FROM documents "
                "ORDER BY id"
            ).fetchall(),
            "chunks": conn.execute("SELECT * FROM chunks ORDER BY id").fetchall(),
            "fts": conn.execute(
                "SELECT rowid, * FROM chunks_fts_content ORDER BY rowid"
            ).fetchall(),
            "tags": conn.execute("SELECT * FROM tags ORDER BY 1, 2").fetchall(),
            "links": conn.execute("SELECT * FROM links ORDER BY 1, 2, 3").fetchall(),
            "names": conn.execute("SELECT * FROM names ORDER BY 1, 2, 3").fetchall(),
        }


def _workers_of(pid: int, *, forked: bool | None = None) -> list[int]:
    """The pool's worker processes among `pid`'s children (not the PDF reader's sandbox):
    forked ones run the run's own command line and ignore SIGINT (the pool's initializer;
    a child of subprocess has the run's command line too until it execs), spawned ones
    multiprocessing's command line. `forked`: only those started that way."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        run = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    workers = []
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            ignores_sigint = _ignores_sigint(int(child))
        except OSError:
            continue
        if cmdline == run and ignores_sigint and forked is not False:
            workers.append(int(child))
        elif b"spawn_main" in cmdline and not forked:
            workers.append(int(child))
    return workers


def _ignores_sigint(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def test_pooled_index_equals_one_process(tmp_path: Path) -> None:
    root = _vault(tmp_path / "vault", START_AFTER + 20)
    run = _index(root, tmp_path / "one", 0)
    assert _watched(run) == set()
    one = _report(run)
    run = _index(root, tmp_path / "pooled", 2)
    assert len(_watched(run)) == 2
    pooled = _report(run)
    assert pooled == one
    assert one["indexed"] == START_AFTER + 21  # the notes and plain.txt
    skipped = {s["path"] for s in one["skipped"]}
    assert {"broken.pdf", "huge.md", "link-out.md"} <= skipped
    assert _rows(tmp_path / "pooled" / "tsm.db") == _rows(tmp_path / "one" / "tsm.db")


def test_a_small_run_starts_no_worker(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    for n in range(START_AFTER - 1):
        (root / f"n{n}.md").write_text(f"# {n}\n\n{JA}\n", encoding="utf-8")
    proc = _index(root, tmp_path / "state", 2)
    assert _watched(proc) == set()
    assert _report(proc)["indexed"] == START_AFTER - 1


def test_ctrl_c_leaves_a_consistent_index(tmp_path: Path) -> None:
    # Enough notes that the interrupt, sent once 40 are stored, finds most of the run still
    # ahead: a run of 406 could store them all in its first grouped commit (0.5 s).
    root = _vault(tmp_path / "vault", START_AFTER + 1000)
    proc = _index(root, tmp_path / "state", 2)
    db = tmp_path / "state" / "tsm.db"
    deadline = time.monotonic() + scaled(120)
    stored = 0
    while stored < 40 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                stored = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        except sqlite3.Error:
            pass
    assert proc.poll() is None, "the run ended before it could be interrupted"
    workers = _workers_of(proc.pid)
    assert workers, "a run this big indexes with worker processes"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=scaled(60))
    assert proc.returncode != 0, f"the run ignored its interrupt: {err[-500:]}"
    assert "Traceback" not in err
    for pid in workers:  # no worker outlives the run
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )
    # Every stored document is whole, and a second run finishes the rest: the same index
    # as one uninterrupted run.
    _report(_index(root, tmp_path / "state", 2))
    _report(_index(root, tmp_path / "clean", 0))
    assert _rows(db) == _rows(tmp_path / "clean" / "tsm.db")


def test_cheap_english_notes_go_to_forked_workers(tmp_path: Path) -> None:
    """A forked worker costs next to nothing to start and takes the reading and parsing off
    the writer even for short English notes: the run forks its workers for them, and stores
    what one process stores."""
    root = tmp_path / "vault"
    root.mkdir()
    for n in range(START_AFTER + 50):
        (root / f"n{n}.md").write_text(f"# Note {n}\n\n{EN} {n}\n", encoding="utf-8")
    proc = _index(root, tmp_path / "state", 2)
    assert len(_watched(proc, forked=True)) == 2
    assert _report(proc)["indexed"] == START_AFTER + 50
    _report(_index(root, tmp_path / "one", 0))
    assert _rows(tmp_path / "state" / "tsm.db") == _rows(tmp_path / "one" / "tsm.db")


def test_the_command_line_forks_its_workers(tmp_path: Path) -> None:
    """A worker forked from the run shares its loaded modules and dictionary: no interpreter
    to start, no imports to run again."""
    root = _vault(tmp_path / "vault", START_AFTER + 20)
    run = _index(root, tmp_path / "state", 2)
    assert len(_watched(run, forked=True)) == 2
    assert _report(run)["indexed"] == START_AFTER + 21


@pytest.mark.parametrize(("threads", "method"), [(0, "fork"), (1, "spawn")])
def test_a_process_with_threads_spawns_its_workers(threads: int, method: str) -> None:
    """A fork copies only the thread that forks, and with it any lock another thread held
    (the daemon indexes beside its server's threads): such a process spawns its workers."""
    code = (
        "import sys, threading; from tsm.indexing_pool import start_method\n"
        "stop = threading.Event()\n"
        f"for _ in range({threads}): threading.Thread(target=stop.wait).start()\n"
        "print(start_method()); stop.set()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == (method if sys.platform == "linux" else "spawn")
