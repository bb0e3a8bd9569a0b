"""Fixtures: `indexed_template` (the sample vault indexed once per session with the real
model), `harness` (a copy of it, no daemon yet) and `daemon` (the same, daemon running)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_harness import Harness  # noqa: E402


@pytest.fixture(scope="session")
def indexed_template(sample_index_template: Path) -> Path:
    """The sample vault indexed once per session (tests/conftest.py); harnesses copy it."""
    return sample_index_template


@pytest.fixture
def harness(indexed_template: Path) -> Iterator[Harness]:
    h = Harness(indexed_template)
    yield h
    h.close()


@pytest.fixture
def daemon(harness: Harness) -> Harness:
    harness.start()
    return harness
