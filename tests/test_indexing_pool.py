"""When the index pool starts: judged on what the caller's own first jobs cost."""

from __future__ import annotations

from tsm.indexing_pool import JOBS_JUDGED, START_AFTER, WorkAhead


def _nothing(*args: object) -> None:
    return None


def _judged(costs: list[float]) -> bool:
    with WorkAhead[int, None](_nothing, _nothing, (), workers=2) as ahead:
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
