"""Numbers and ids the user types are user input: huge, negative,
fractional, non-ASCII or non-numeric values are user errors (exit 1), never exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

HUGE = "99999999999999999999999"
BAD_NUMBERS = [
    HUGE,
    "9223372036854775808",
    "-1",
    "-" + HUGE,
    "0.5",
    "1e3",
    "²",
    "١٢",
    "abc",
    "",
    "9" * 5000,
]


@pytest.mark.parametrize("command", ["get", "info"])
def test_document_ids(indexed_read_only: Path, tsm: Any, command: str) -> None:
    for value in BAD_NUMBERS:
        result = (
            tsm(command, "--", value, "-f", "json")
            if value.startswith("-")
            else tsm(command, value, "-f", "json")
        )
        assert result.code == 1, (value[:30], result.err)
        assert result.error()["kind"] == "user_error"
    assert tsm("get", "1", "-f", "json").code == 0


@pytest.mark.parametrize("option", ["-k", "--include-content"])
def test_search_numbers(indexed_read_only: Path, tsm: Any, option: str) -> None:
    for value in [*BAD_NUMBERS, "10001"]:
        if option == "--include-content" and value == "0":
            continue
        result = tsm("search", "git", f"{option}={value}", "-f", "json")
        assert result.code == 1, (option, value[:30], result.err)
        assert result.error()["kind"] == "user_error"
        assert "Traceback" not in result.err


def test_mcp_port(vault: Path, tsm: Any) -> None:
    for value in ["70000", "-1", HUGE, "http", "80.5"]:
        result = tsm("mcp", "--http", f"--port={value}", "-f", "json", timeout=60)
        assert result.code == 1, (value, result.err)
        assert "--port" in result.error()["error"]
