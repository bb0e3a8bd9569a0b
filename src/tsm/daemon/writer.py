"""The daemon's single writer: one thread owns the only write connection and runs the core's
jobs (core/jobs.py) from a queue, so writes never contend with each other, while searches
read through their own WAL connections and never wait behind it. Long work (re-tokenizing,
embedding) is cut into batch jobs so a watcher update or a `tsm index` gets its turn in
between.

The Backfill thread fills in vectors in the background: it queues one embed job per batch,
which the writer runs with the backfill's embedding worker. The writer wakes it after every
job that changed the database, whoever submitted the job (the watcher, `tsm index`,
`ingest-session`, a reindex), so no caller has to remember to. It embeds only while it holds
the index's embedding role: a `tsm index` embedding in its own process holds it, and the
backfill waits for it rather than embed the same texts. After a failure (a full disk, a model
still loading) it tries again on a timer.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..core.jobs import EmbedJob, Job, Runner
from ..errors import EmbedderUnavailable
from ..statedir import embedding_role

if TYPE_CHECKING:
    from ..embed import Embedder

log = logging.getLogger("tsm.daemon")
RETRY_FIRST = 2.0  # seconds before the backfill tries again after a failure
RETRY_MAX = 30.0  # doubling up to this
ROLE_POLL = 1.0  # seconds between looks at an embedding role another process holds


@dataclass
class _Queued:
    job: Job
    embedder: Embedder | None = None
    quiet: bool = False  # changes it makes do not call the `on_change` listeners
    when: Callable[[], bool] | None = None  # asked as it starts: run it at all?
    future: Future[Any] = field(default_factory=Future)


class Writer:
    """Runs the core's jobs on the one write connection, one at a time, in submission order."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.runner = Runner(settings)  # creates and migrates the DB if needed
        self._jobs: queue.Queue[_Queued | None] = queue.Queue()
        self.current: str | None = None
        self.done_jobs = 0
        self._listeners: list[Callable[[], None]] = []
        self._thread = threading.Thread(target=self._run, name="tsm-writer", daemon=True)
        self._thread.start()

    def submit(
        self,
        job: Job,
        *,
        embedder: Embedder | None = None,
        quiet: bool = False,
        when: Callable[[], bool] | None = None,
    ) -> Future[Any]:
        """Queue `job`, embedding with `embedder` (None: the backfill embeds later); run it
        only if `when()` holds as it starts (None: always; skipped, it returns None). Unless
        `quiet`, the `on_change` listeners are called after it if it changed any row (before
        its future resolves, so a caller that waits for it finds the backfill woken)."""
        queued = _Queued(job, embedder, quiet, when)
        self._jobs.put(queued)
        return queued.future

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
            queued = self._jobs.get()
            if queued is None:
                break
            if not queued.future.set_running_or_notify_cancel():
                continue
            label = queued.job.label
            self.current = label
            started = time.perf_counter()
            changes = self.runner.changes
            try:
                skip = queued.when is not None and not queued.when()
                result = None if skip else self.runner.run(queued.job, queued.embedder)
            except BaseException as exc:  # the job's caller sees it; the writer lives on
                log.warning("job %s failed: %s: %s", label, type(exc).__name__, exc)
                self._changed(queued, changes)  # what it committed before failing stays
                queued.future.set_exception(exc)
            else:
                self._changed(queued, changes)
                queued.future.set_result(result)
            finally:
                self.current = None
                self.done_jobs += 1
                log.debug("job %s took %.0f ms", label, (time.perf_counter() - started) * 1000)
        self.runner.close()

    def _changed(self, queued: _Queued, changes_before: int) -> None:
        if queued.quiet or self.runner.changes == changes_before:
            return
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # a listener's failure is not the job's
                log.exception("writer listener failed after job %s", queued.job.label)


class Backfill:
    """Embeds chunks that have no vector yet, one batch job at a time, in the background."""

    def __init__(
        self,
        settings: Settings,
        writer: Writer,
        model_name: Callable[[], str | None],
        embedder: Callable[[], Embedder | None],
        has_pending: Callable[[str], bool],
    ) -> None:
        # `model_name` comes from the query worker and `has_pending` reads through a pooled
        # connection, so that the backfill worker (a second copy of the model) is started
        # only when there is something to embed.
        self.settings = settings
        self.writer = writer
        self._model_name = model_name
        self._embedder = embedder
        self._has_pending = has_pending
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
        retry: float | None = None  # seconds until the next try after a failure
        while not self._stop:
            self._wake.wait(retry)
            self._wake.clear()
            if self._stop:
                break
            failed = retry is not None and self.state != "waiting"
            retry = None
            try:
                retry = self._backlog()
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

    def _backlog(self) -> float | None:
        """Embed until nothing is left; the seconds until the next look when another process
        holds the embedding role (it embeds what is pending), else None."""
        name = self._model_name()
        if name is None:
            self.state = "disabled"
            return None
        if not self._has_pending(name):
            self.writer.submit(EmbedJob(), quiet=True).result()  # the books: orphans
            self.state, self.detail = "idle", None
            return None
        embedder = self._embedder()
        if embedder is None:
            self.state = "disabled"
            return None
        self.state, self.detail = "embedding", None
        while not self._stop:
            # The role is taken per batch, so a `tsm index` that waits for it gets it next.
            with embedding_role(self.settings.state_dir, wait=False) as held:
                if not held:
                    self.state = "waiting"
                    self.detail = "another process is embedding this index"
                    return ROLE_POLL
                job = EmbedJob(self.batch_size)
                done = int(self.writer.submit(job, embedder=embedder, quiet=True).result())
            self.embedded += done
            if done < self.batch_size:
                break
        self.state, self.detail = "idle", None
        return None

    def _next_retry(self, failed_before: bool) -> float:
        """Seconds until the next try: RETRY_FIRST, doubling while tries fail, to RETRY_MAX."""
        self._last_retry = min(RETRY_MAX, self._last_retry * 2) if failed_before else RETRY_FIRST
        return self._last_retry
