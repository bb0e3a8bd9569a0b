"""When the index pool starts (judged on what the caller's own first jobs cost, when its
workers must be spawned) and how much it holds in flight."""

from __future__ import annotations

import os

from tsm.indexing_pool import (
    BATCH_BYTES,
    BATCHES_PER_WORKER,
    JOBS_JUDGED,
    START_AFTER,
    WorkAhead,
)


def _nothing(*args: object) -> None:
    return None


def _pid(*args: object) -> int:
    return os.getpid()


def _judged(costs: list[float], method: str = "spawn") -> bool:
    with WorkAhead[int, None](_nothing, _nothing, (), workers=2, method=method) as ahead:
        for key in range(START_AFTER):
            ahead.offer(key)
        for cost in costs:
            ahead.observe(cost)
        return ahead.started


def test_a_first_job_paying_one_time_costs_does_not_start_the_pool() -> None:
    """The first parse also pays a reader's lazy imports (12 ms here for an English note
    whose later parses take 0.15 ms): on a busy machine it lifted the mean over the bar."""
    assert not _judged([0.020] + [0.0002] * (JOBS_JUDGED - 1))


def test_jobs_that_cost_more_than_sending_them_start_the_pool() -> None:
    assert _judged([0.020] + [0.002] * (JOBS_JUDGED - 1))
    assert not _judged([0.002] * (JOBS_JUDGED - 1))  # not judged yet


def test_forked_workers_start_on_the_count_alone() -> None:
    """A forked worker costs next to nothing to start: cheap jobs are sent too."""
    assert _judged([], method="fork")
    assert _judged([0.0002] * JOBS_JUDGED, method="fork")


def test_the_bytes_in_flight_are_bounded() -> None:
    """Big files fill the window by their bytes, not their count: the parsed files held in
    memory stay bounded whatever their size."""
    with WorkAhead[int, int](_pid, _nothing, (), workers=2, method="fork") as ahead:
        for key in range(START_AFTER):  # small files start the pool
            ahead.offer(key, size=100)
        assert ahead.started
        assert all(ahead.take(key) not in (None, os.getpid()) for key in range(START_AFTER))
        big = START_AFTER
        while ahead.wants():
            ahead.offer(big, size=BATCH_BYTES)
            big += 1
        assert big - START_AFTER == 2 * BATCHES_PER_WORKER + 1
        taken = [ahead.take(key) for key in range(START_AFTER, big)]
        assert all(pid not in (None, os.getpid()) for pid in taken)
