"""The file watcher: changes under the index root (watchfiles), debounced, become the core's
index jobs (core/jobs.IndexJob, `changes`) on the writer, for exactly the changed paths. A
job looks at the files as they are when it runs, so a burst of creations and deletions ends
in the right state whatever order events arrive in.
The writer wakes the embedding backfill after each job that wrote chunks (daemon/writer.py).

Events before the watches exist are lost: files edited while the daemon was stopped, or in
the moment it starts. So once watching, it catches up with one incremental scan, as
`tsm index` would (a stat per unchanged file)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path, PurePosixPath
from typing import Any

from ..config import Settings
from ..core.jobs import IndexJob, indexable
from ..workspace import IGNORE_FILE, IgnoreRules
from .writer import Writer

log = logging.getLogger("tsm.daemon")
DEBOUNCE_MS = 800  # group a burst (an editor's save, a git checkout) into one job
STEP_MS = 150
QUIET_MS = 1000  # watchfiles yields after this long without (even filtered) changes
POLL_S, POLL_ROUNDS = 3.0, 20  # with a name watchfiles cannot decode: scan, retry in a minute


class Watcher:
    """Runs watchfiles in a thread; `status()` reports what it has done."""

    def __init__(self, settings: Settings, writer: Writer, current: Callable[[], bool]) -> None:
        self.settings = settings
        # Whether `settings` still hold (daemon/freshness.still_current): asked before each
        # run, so that no run walks folders by what tsm.toml and the links in them said at
        # start-up.
        self.current = current
        self.root = settings.index_root
        self.writer = writer
        self.rules = IgnoreRules(self.root)
        self.state = "starting"
        self.detail: str | None = None
        self.batches = 0
        self.paths_seen = 0
        self.last_change: float | None = None
        self.caught_up = False  # the catch-up scan has run
        self._catch_up_queued = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tsm-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(3)

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "detail": self.detail,
            "root": str(self.root),
            "batches": self.batches,
            "paths": self.paths_seen,
            "last_change": self.last_change,
            "caught_up": self.caught_up,
        }

    def _run(self) -> None:
        try:
            from watchfiles import watch
        except ImportError as exc:
            self.state, self.detail = "unavailable", f"watchfiles is not installed: {exc}"
            return
        while not self._stop.is_set():
            try:
                self.state, self.detail = "watching", None
                for changes in watch(
                    self.root,
                    watch_filter=self._interesting,
                    debounce=DEBOUNCE_MS,
                    step=STEP_MS,
                    stop_event=self._stop,
                    rust_timeout=QUIET_MS,
                    yield_on_timeout=True,
                    raise_interrupt=False,
                    ignore_permission_denied=True,
                ):
                    self._watching()
                    if changes:
                        self._handle({Path(p) for _, p in changes})
                break
            except Exception as exc:  # e.g. inotify watch limit reached
                if not _undecodable_name(exc):
                    log.exception("file watcher stopped")
                    self.state, self.detail = "failed", f"{type(exc).__name__}: {exc}"
                    return
                # watchfiles gives up (a batch, or the whole watch when it is a folder's
                # name) on a path that is not UTF-8: scan instead for a while, then retry.
                log.warning("watcher: %s; scanning every %g s instead", exc, POLL_S)
                self._poll(f"{exc}: scanning every {POLL_S:g} s instead of watching")
        self.state = "stopped"

    def _poll(self, why: str) -> None:
        """Incremental scans (a stat per unchanged file) for POLL_ROUNDS rounds."""
        self.state, self.detail = "polling", why
        for _ in range(POLL_ROUNDS):
            try:
                self._catch_up().result()
            except Exception:  # the writer logged it; the next round tries again
                pass
            if self._stop.wait(POLL_S):
                return
        self._catch_up_queued = False  # watching again: catch up once its watches exist

    def _watching(self) -> None:
        """Called on any sign of life from watchfiles (a yield, a filtered event): the watches
        exist, so catch up once with what happened before them. A quiet period cannot be
        the sign: the daemon's own DB and log writes are events too, filtered out."""
        if not self._catch_up_queued:
            self._catch_up_queued = True
            self._catch_up()

    def _interesting(self, change: Any, path: str) -> bool:
        """Cheap pre-filter: drop ignored paths (the state dir above all, or every DB write
        would wake us). Paths without a suffix may be folders and are kept."""
        self._watching()
        rel = self._rel(Path(path))
        if rel is None or rel == "":
            return False
        if rel == IGNORE_FILE:
            return True
        if self._ignored(rel):
            return False
        return indexable(Path(path)) or not PurePosixPath(rel).suffix

    def _ignored(self, rel: str) -> bool:
        """Checked with the current rules: a .tsmignore edited in the same burst applies to
        the rest of it."""
        return self.rules.ignored_within(rel)

    def _rel(self, path: Path) -> str | None:
        try:
            return PurePosixPath(path.relative_to(self.root)).as_posix()
        except ValueError:
            return None

    def _handle(self, paths: set[Path]) -> None:
        self.last_change = time.time()
        if self.root / IGNORE_FILE in paths:
            self.rules = IgnoreRules(self.root)
            paths.discard(self.root / IGNORE_FILE)
        if not paths:
            return
        self.batches += 1
        self.paths_seen += len(paths)
        log.info("watcher: %d changed paths", len(paths))
        job = IndexJob(tuple(sorted(paths)), embed=False, changes=True)
        self.writer.submit(job, when=self.current)

    def _catch_up(self) -> Future[Any]:
        """What changed before the watches existed: one incremental scan of the root."""
        future = self.writer.submit(IndexJob((), embed=False, changes=True), when=self.current)
        future.add_done_callback(self._caught_up)
        return future

    def _caught_up(self, future: Future[Any]) -> None:
        self.caught_up = True
        report = None if future.exception() else future.result()
        if report is not None and (report.indexed or report.removed or report.renamed):
            log.info(
                "watcher: catch-up indexed %d, removed %d, renamed %d",
                report.indexed,
                report.removed,
                report.renamed,
            )


def _undecodable_name(exc: Exception) -> bool:
    """watchfiles' error for a path it cannot turn into a str (`b'x-\\xff.md'`)."""
    return type(exc).__name__ == "WatchfilesRustInternalError" and "decode path" in str(exc)
