"""The daemon's single writer: one thread owns the only write connection and runs jobs from a
queue, so writes never contend with each other, while searches read through their own WAL
connections and never wait behind it. Long work (re-tokenizing, embedding) is cut into batch
jobs so a watcher update or a `tsm index` gets its turn in between.

The Backfill thread fills in vectors in the background: it reads chunks that lack one, has
the embedding worker embed them (outside the writer), and hands the rows to the writer.
The writer wakes it after every job that changed the database, whoever submitted the job
(the watcher, `tsm index`, `ingest-session`, a reindex), so no caller has to remember to.
After a failure (a full disk, a model still loading) it tries again on a timer.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from ..embed import Embedder, passage_text
from ..errors import EmbedderUnavailable
from ..store import vectors
from ..store.connect import Connection, Transaction, open_store, rollback

log = logging.getLogger("tsm.daemon")
JobFn = Callable[[Connection], Any]
RETRY_FIRST = 2.0  # seconds before the backfill tries again after a failure
RETRY_MAX = 30.0  # doubling up to this


@dataclass
class _Job:
    label: str
    fn: JobFn
    quiet: bool = False  # changes it makes do not call the `on_change` listeners
    future: Future[Any] = field(default_factory=Future)


class Writer:
    """Runs `fn(write_conn)` jobs one at a time, in submission order."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.conn = open_store(settings, create=True)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self.current: str | None = None
        self.done_jobs = 0
        self._listeners: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._run, name="tsm-writer", daemon=True)
        self._thread.start()

    def submit(self, label: str, fn: JobFn, *, quiet: bool = False) -> Future[Any]:
        """Queue `fn(write_conn)`. Unless `quiet`, the `on_change` listeners are called after
        it if it changed any row (before its future resolves, so a caller that waits for it
        finds the backfill already woken)."""
        job = _Job(label, fn, quiet)
        self._jobs.put(job)
        return job.future

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener()` (on the writer thread: keep it quick) after each job that
        inserted, updated or deleted rows, whether or not it then failed."""
        self._listeners.append(listener)

    def queue_length(self) -> int:
        return self._jobs.qsize()

    def stop(self, timeout: float = 10.0) -> None:
        self._jobs.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                break
            if not job.future.set_running_or_notify_cancel():
                continue
            self.current = job.label
            started = time.perf_counter()
            changes = self.conn.total_changes
            try:
                result = job.fn(self.conn)
            except BaseException as exc:  # the job's caller sees it; the writer lives on
                rollback(self.conn)
                log.warning("job %s failed: %s: %s", job.label, type(exc).__name__, exc)
                self._changed(job, changes)  # what it committed before failing stays
                job.future.set_exception(exc)
            else:
                self._changed(job, changes)
                job.future.set_result(result)
            finally:
                self.current = None
                self.done_jobs += 1
                log.debug("job %s took %.0f ms", job.label, (time.perf_counter() - started) * 1000)
        self.conn.close()

    def _changed(self, job: _Job, changes_before: int) -> None:
        if job.quiet or self.conn.total_changes == changes_before:
            return
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # a listener's failure is not the job's
                log.exception("writer listener failed after job %s", job.label)


class Backfill:
    """Embeds chunks that have no vector yet, one batch at a time, in the background."""

    def __init__(
        self,
        settings: Settings,
        writer: Writer,
        model_name: Callable[[], str | None],
        embedder: Callable[[], Embedder | None],
    ) -> None:
        # `model_name` comes from the query worker, so that the backfill worker (a second
        # copy of the model) is started only when there is something to embed.
        self.settings = settings
        self.writer = writer
        self._model_name = model_name
        self._embedder = embedder
        self._wake = threading.Event()
        self._stop = False
        self.state = "idle"
        self.detail: str | None = None
        self.embedded = 0  # rows embedded by this daemon since it started
        self._last_retry = RETRY_FIRST
        self.batch_size = int(settings.get("embedding.batch_size"))
        self._thread = threading.Thread(target=self._run, name="tsm-backfill", daemon=True)
        self._thread.start()
        writer.on_change(self.wake)  # every job that wrote chunks, whoever submitted it
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "detail": self.detail, "embedded_since_start": self.embedded}

    def _run(self) -> None:
        conn: Connection | None = None
        retry: float | None = None  # seconds until the next try after a failure
        while not self._stop:
            self._wake.wait(retry)
            self._wake.clear()
            if self._stop:
                break
            failed = retry is not None
            retry = None
            try:
                name = self._model_name()
                if name is None:
                    self.state = "disabled"
                    continue
                conn = conn or open_store(self.settings)
                if not vectors.pending(conn, name, 1):
                    self.writer.submit("drop orphan vectors", vectors_cleanup, quiet=True).result()
                    continue
                embedder = self._embedder()
                if embedder is None:
                    self.state = "disabled"
                    continue
                self.state, self.detail = "embedding", None
                while not self._stop and self._one_batch(conn, embedder):
                    pass
                self.state = "idle"
            except EmbedderUnavailable as exc:
                # A model still loading (slowly, on a busy machine) will be ready: try again
                # later. A failed or crashed one stays so (never restarted): asking it again
                # costs nothing.
                retry = self._next_retry(failed)
                self.state, self.detail = "paused", exc.message
            except Exception as exc:
                # A full disk, a locked or read-only database: nothing may write again to
                # wake us once it is over, so try again on a timer, less often each time.
                retry = self._next_retry(failed)
                if failed:
                    log.warning("backfill failed again (retry in %.0f s): %s", retry, exc)
                else:
                    log.exception("backfill failed (retry in %.0f s)", retry)
                self.state, self.detail = "error", f"{type(exc).__name__}: {exc}"

    def _next_retry(self, failed_before: bool) -> float:
        """Seconds until the next try: RETRY_FIRST, doubling while tries fail, to RETRY_MAX."""
        self._last_retry = min(RETRY_MAX, self._last_retry * 2) if failed_before else RETRY_FIRST
        return self._last_retry

    def _one_batch(self, conn: Connection, embedder: Embedder) -> bool:
        """Embed one batch; False when nothing is left."""
        batch = vectors.pending(conn, embedder.name, self.batch_size)
        if not batch:
            self.writer.submit("drop orphan vectors", vectors_cleanup, quiet=True).result()
            return False
        matrix = embedder.embed_documents([passage_text(p.title, p.section, p.text) for p in batch])
        name, dim = embedder.name, embedder.dim
        rows = list(zip((p.embed_hash for p in batch), matrix, strict=True))

        def store(wconn: Connection) -> None:
            with Transaction(wconn):
                vectors.set_meta(wconn, "model_name", name)
                vectors.set_meta(wconn, "embedding_dim", str(dim))
                vectors.store(wconn, name, rows)

        self.writer.submit(f"store {len(rows)} vectors", store, quiet=True).result()
        self.embedded += len(rows)
        return True


def vectors_cleanup(conn: Connection) -> int:
    with Transaction(conn):
        return vectors.drop_orphans(conn)
