"""Shared fixtures: every test gets its own index root and state dir, the real CLI run as a
subprocess, and a copy of the sample vault."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_VAULT = REPO / "examples" / "vault"
FIXED_NOW = "2026-03-20T12:00:00"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's config or writes outside tmp_path."""
    for key in list(os.environ):
        if key.startswith("TSM_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TSM_NO_USER_CONFIG", "1")
    monkeypatch.setenv("TSM_AUTOSTART", "0")  # tests that want a daemon start one themselves
    monkeypatch.setenv("TSM_NOW", FIXED_NOW)  # dates and recency never rot with the calendar
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    yield


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/vault as the index root (TSM_INDEX_ROOT points at it)."""
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, root, ignore=shutil.ignore_patterns(".tsm"))
    monkeypatch.setenv("TSM_INDEX_ROOT", str(root))
    return root


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, Any]:
        lines = [line for line in self.err.splitlines() if line.startswith("{")]
        assert len(lines) == 1, self.err
        return json.loads(lines[0])


Tsm = Callable[..., CliResult]


@pytest.fixture
def tsm(tmp_path: Path) -> Tsm:
    """Run the real CLI (`python -m tsm`) in a subprocess with the test's environment."""

    def run(*args: str, input: str | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 300) -> CliResult:
        full_env = {**os.environ, **(env or {})}
        proc = subprocess.run([sys.executable, "-m", "tsm", *args], input=input,
                              capture_output=True, text=True, cwd=cwd or tmp_path,
                              env=full_env, timeout=timeout)
        return CliResult(proc)

    return run


@pytest.fixture
def indexed(vault: Path, tsm: Tsm) -> Path:
    """The sample vault indexed with the real default embedding model."""
    result = tsm("index", "-f", "json")
    assert result.code == 0, result.err
    return vault
