"""Work done ahead in worker processes while this process stores: the indexing loop hands
each file that looks changed to a pool sized to the cores, and takes the results back in its
own order. Only what is handed out runs in a worker; whatever comes back missing (a worker
that died, a job not handed out) the caller does itself, so a run with or without the pool
stores the same rows in the same order.

The pool starts only once a run has more than a handful of such files: a hook re-indexing
one note must not pay for starting workers. Workers are forked where that is safe, else
spawned (start_method)."""

from __future__ import annotations

import os
import signal
import statistics
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Generic, TypeVar

from .errors import ConfigError

Key = TypeVar("Key")
Result = TypeVar("Result")

WORKERS_ENV = "TSM_INDEX_WORKERS"
# Files that must look changed before a pool starts: two spawned workers cost about half a
# second of CPU (an interpreter, tsm's imports, a dictionary), about what this process
# spends parsing and tokenizing 256 Japanese notes. Files per batch; batches in flight per
# worker (with one batch waiting, this bounds the parsed files held in memory).
START_AFTER = 256
# Spawned workers start only when a job is worth sending: a spawned worker costs about a
# quarter of a second of CPU (an interpreter, tsm's imports), which short English notes
# (about 0.3 ms each) do not pay back. Judged on the first jobs this process runs itself.
# A forked worker costs next to nothing to start, and takes more off this process than
# handing its results back costs, English notes included: it starts on the count alone.
MIN_JOB_SECONDS = 0.001
JOBS_JUDGED = 16
# A batch is one hand-off to a worker and back: a wake-up of the pool's threads, pipe
# writes, the GIL passed between this process's threads. The first batches are small, so
# the workers start at once; later ones grow to BATCH_FILES files, or BATCH_BYTES bytes of
# files, whichever comes first (a big file is a batch of its own). Batches in flight per
# worker: with one batch waiting, this bounds the parsed files held in memory.
FIRST_BATCH_FILES = 8
BATCH_FILES = 64
BATCH_BYTES = 256 * 1024
BATCHES_PER_WORKER = 2


def worker_count(environ: dict[str, str] | None = None) -> int:
    """Worker processes for a big run: TSM_INDEX_WORKERS, else the cores this process may
    use (0 or 1: none; this process does everything)."""
    value = (os.environ if environ is None else environ).get(WORKERS_ENV, "").strip()
    if value:
        try:
            return max(0, int(value))
        except ValueError:
            raise ConfigError(
                f"{WORKERS_ENV}={value!r} is not a whole number",
                "set it to the number of worker processes, or 0 for none",
            ) from None
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def start_method() -> str:
    """How workers start: forked from a process that runs no other thread (the command line),
    where a worker is ready at once and shares what this process has loaded (tsm's modules,
    the dictionary's pages); spawned from one that does (the daemon), whose threads' held
    locks a fork would copy; and spawned where fork is not the platform's way (macOS)."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _quiet_worker(initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
    # Ctrl-C reaches the whole process group: the writer stops the run and shuts the pool
    # down; a worker printing its own KeyboardInterrupt would only add noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initializer(*initargs)


def _run_batch(
    work: Callable[..., Result], jobs: list[tuple[Key, tuple[Any, ...]]]
) -> dict[Key, Result]:
    return {key: work(*args) for key, args in jobs}


class WorkAhead(Generic[Key, Result]):
    """Jobs run ahead in worker processes, results taken back by key.

    `offer` is fed every candidate job in the order the caller will `take` them, with the
    bytes it reads; jobs wait until START_AFTER are known (and, for spawned workers, the
    caller's own first jobs (`observe`) showed them worth sending), then go to the pool in
    batches, BATCHES_PER_WORKER batches per worker at a time."""

    def __init__(
        self,
        work: Callable[..., Result],
        initializer: Callable[..., None],
        initargs: tuple[Any, ...],
        workers: int | None = None,
        method: str | None = None,
    ) -> None:
        self._work, self._initializer, self._initargs = work, initializer, initargs
        self._workers = worker_count() if workers is None else workers
        self._method = method or start_method()
        self._pool: ProcessPoolExecutor | None = None
        self._waiting: OrderedDict[Key, tuple[Any, ...]] = OrderedDict()
        self._sent: dict[Key, Future[dict[Key, Result]]] = {}
        self._done: dict[Key, Result] = {}  # the rest of a batch whose first job was taken
        self._bytes: dict[Key, int] = {}  # what each job not yet taken reads
        self._held = 0  # their sum
        self._batches = 0  # submitted and not yet read back
        self._submitted = 0  # batches ever submitted
        self._costs: list[float] = []  # the CPU seconds of the first jobs run here
        self._broken = self._workers < 2  # one worker would only move the work elsewhere

    @property
    def started(self) -> bool:
        return self._pool is not None

    def wants(self) -> bool:
        """Whether another job may be offered now (the window is not full)."""
        if self._broken:
            return False
        if self._pool is None:
            return len(self._waiting) < START_AFTER
        batches = self._workers * BATCHES_PER_WORKER + 1
        held = len(self._waiting) + len(self._sent) + len(self._done)
        return held < batches * BATCH_FILES and self._held < batches * BATCH_BYTES

    def offer(self, key: Key, *args: Any, size: int = 0) -> None:
        """A job, and the bytes it reads (what bounds a batch and the jobs in flight)."""
        self._waiting[key] = args
        self._held += size - self._bytes.get(key, 0)
        self._bytes[key] = size
        self._start_if_worth_it()
        self._submit()

    def observe(self, cpu_seconds: float) -> None:
        """Told what a job cost when the caller ran it itself: judges whether to start."""
        if len(self._costs) < JOBS_JUDGED:
            self._costs.append(cpu_seconds)
        self._start_if_worth_it()

    def _start_if_worth_it(self) -> None:
        if (
            self._pool is None
            and not self._broken
            and len(self._waiting) >= START_AFTER
            and (self._method == "fork" or self._worth_sending())
        ):
            self._start()

    def _worth_sending(self) -> bool:
        # The median: the first job also pays one-time costs (a reader's lazy imports),
        # which on a busy machine lifted the mean of cheap notes over the bar.
        return len(self._costs) >= JOBS_JUDGED and statistics.median(self._costs) >= MIN_JOB_SECONDS

    def take(self, key: Key) -> Result | None:
        """The job's result, waiting for it; None when it was not run ahead or its worker
        failed (the caller then does the work itself)."""
        self._waiting.pop(key, None)
        self._held -= self._bytes.pop(key, 0)
        if key in self._done:
            return self._done.pop(key)
        future = self._sent.pop(key, None)
        if future is None:
            return None
        try:
            results = future.result()
        except Exception:  # a worker died (killed, out of memory): do the rest here
            self._stop()
            return None
        self._batches -= 1
        for other, result in results.items():
            if self._sent.pop(other, None) is not None:
                self._done[other] = result
        self._submit()
        return results.get(key)

    def forget(self, key: Key) -> None:
        """Drop a job the caller no longer needs (it decided without parsing)."""
        self._waiting.pop(key, None)
        self._done.pop(key, None)
        if key in self._sent:
            self.take(key)  # its batch holds later jobs too
        self._held -= self._bytes.pop(key, 0)

    def _start(self) -> None:
        import multiprocessing

        self._pool = ProcessPoolExecutor(
            self._workers,
            mp_context=multiprocessing.get_context(self._method),
            initializer=_quiet_worker,
            initargs=(self._initializer, self._initargs),
        )

    def _submit(self) -> None:
        while (
            self._pool is not None
            and self._waiting
            and self._batches < self._workers * BATCHES_PER_WORKER
        ):
            jobs = self._next_batch()
            try:
                future = self._pool.submit(_run_batch, self._work, jobs)
            except Exception:  # the pool broke: the rest is done in this process
                self._stop()
                return
            self._batches += 1
            self._submitted += 1
            for key, _ in jobs:
                self._sent[key] = future

    def _next_batch(self) -> list[tuple[Key, tuple[Any, ...]]]:
        """The next waiting jobs, as many as a batch holds: FIRST_BATCH_FILES in each
        worker's first batch, then BATCH_FILES, cut once they read BATCH_BYTES."""
        files = FIRST_BATCH_FILES if self._submitted < self._workers else BATCH_FILES
        jobs: list[tuple[Key, tuple[Any, ...]]] = []
        size = 0
        while self._waiting and len(jobs) < files and (not jobs or size < BATCH_BYTES):
            key, args = self._waiting.popitem(last=False)
            jobs.append((key, args))
            size += self._bytes.get(key, 0)
        return jobs

    def _stop(self) -> None:
        self._broken = True
        self._waiting.clear()
        self._sent.clear()
        self._done.clear()
        self._bytes.clear()
        self._held = 0
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        """Stop the workers; jobs not yet taken are dropped."""
        for future in set(self._sent.values()):
            future.cancel()
        self._waiting.clear()
        self._sent.clear()
        self._done.clear()
        self._bytes.clear()
        self._held = 0
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> WorkAhead[Key, Result]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fill(
    ahead: WorkAhead[Key, Any], candidates: Iterator[tuple[Key, tuple[Any, ...], int]]
) -> None:
    """Offer jobs (key, arguments, bytes read) from `candidates` while the window has room."""
    while ahead.wants():
        job = next(candidates, None)
        if job is None:
            return
        ahead.offer(job[0], *job[1], size=job[2])
