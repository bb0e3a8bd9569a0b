"""Fixtures: `indexed_template` (the sample vault indexed once per session with the real
model), `harness` (a copy of it, no daemon yet) and `daemon` (the same, daemon running)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_harness import Harness  # noqa: E402


@pytest.fixture(scope="session")
def indexed_template() -> Iterator[Path]:
    """Index once: the real model embeds the sample vault in a few seconds on 2 cores."""
    import os

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("TSM_")}
    os.environ["TSM_NO_USER_CONFIG"] = "1"
    try:
        h = Harness()
        result = h.cli("index", "-f", "json")
        assert result.code == 0, result.err
        template = h.dir.parent / (h.dir.name + "-template")
        shutil.copytree(h.root, template, ignore=shutil.ignore_patterns("logs", "*.sock"))
        h.close()
    finally:
        os.environ.pop("TSM_NO_USER_CONFIG", None)
        os.environ.update(saved)
    yield template
    shutil.rmtree(template, ignore_errors=True)


@pytest.fixture
def harness(indexed_template: Path) -> Iterator[Harness]:
    h = Harness(indexed_template)
    yield h
    h.close()


@pytest.fixture
def daemon(harness: Harness) -> Harness:
    harness.start()
    return harness
