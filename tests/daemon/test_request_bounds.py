"""A search field's bounds are declared once (core/request.py), so every interface takes and
refuses the same numbers: the command line (in-process, and forwarded whole to the daemon),
the daemon's wire and the MCP tool. Each refuses with its documented error: exit 1 and a
`user_error` object, a `user_error` reply, a tool error naming the bound; the MCP schema
publishes the same bounds."""

from __future__ import annotations

import sys
from typing import Any

import anyio
from daemon_harness import Harness
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tsm.core.request import Option, declared_options

BOUNDED: list[tuple[str, Option]] = [
    (declared.name, option) for declared, option in declared_options() if option.bounds
]


def cases(option: Option) -> list[tuple[int, bool]]:
    """(value, accepted) at and just past each end of the bounds."""
    assert option.bounds is not None
    low, high = option.bounds
    return [(low - 1, False), (low, True), (high, True), (high + 1, False)]


def test_some_fields_are_bounded() -> None:
    assert {name for name, _ in BOUNDED} >= {"top_k", "include_content"}


def test_command_line_and_wire_take_the_same_numbers(
    shared_daemon: Harness, in_process: Harness
) -> None:
    config = shared_daemon.request({"v": 2, "op": "ping", "args": {}})["result"]["config"]
    for name, option in BOUNDED:
        assert option.bounds is not None
        low, high = option.bounds
        for value, accepted in cases(option):
            typed = ("search", "git", option.label, str(value), "-f", "json")
            forwarded = shared_daemon.cli(*typed)
            reply = shared_daemon.request(
                {
                    "v": 2,
                    "op": "search",
                    "config": config,
                    "args": {"request": {"text": "git", name: value}},
                }
            )
            if accepted:
                assert forwarded.code == 0, (name, value, forwarded.err)
                assert reply["ok"] is True, (name, value, reply)
                continue
            local = in_process.cli(*typed)  # refused while parsing: no model is loaded
            for run in (local, forwarded):
                error = run.error()
                assert run.code == 1 and error["kind"] == "user_error", (name, value, error)
                assert f"from {low} to {high}" in error["error"], error
            assert reply["ok"] is False, (name, value, reply)
            error = reply["error"]
            assert error["kind"] == "user_error" and error["exit_code"] == 1, error
            assert f"from {low} to {high}" in error["message"], error


def test_mcp_takes_the_same_numbers(shared_daemon: Harness) -> None:
    """Through the daemon (the MCP server asks it), so an accepted search loads no model."""
    env = {**shared_daemon.env}
    refused: list[str] = []
    accepted_wrongly: list[str] = []

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tsm", "mcp", "--no-warmup"], env=env
        )
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    schema = next(t for t in listed.tools if t.name == "search").input_schema
                    for name, option in BOUNDED:
                        assert option.mcp is not None and option.bounds is not None
                        assert _bounds(schema["properties"][option.mcp]) == option.bounds, name
                        for value, accepted in cases(option):
                            result = await session.call_tool(
                                "search", {"query": "git", option.mcp: value}
                            )
                            text = result.content[0].text if result.content else ""
                            if accepted and result.is_error:
                                refused.append(f"{name}={value}: {text[:200]}")
                            if not accepted:
                                bound = option.bounds[0] if value < option.bounds[0] else None
                                shown = str(option.bounds[1] if bound is None else bound)
                                if not result.is_error or "system_error" in text:
                                    accepted_wrongly.append(f"{name}={value}: {text[:200]}")
                                elif shown not in text:
                                    accepted_wrongly.append(f"{name}={value} no bound: {text}")

    anyio.run(main)
    assert not refused, refused
    assert not accepted_wrongly, accepted_wrongly


def _bounds(schema: dict[str, Any]) -> tuple[int, int]:
    """(minimum, maximum) of a property, inside its anyOf when it may be null."""
    for part in [schema, *schema.get("anyOf", [])]:
        if "minimum" in part or "maximum" in part:
            return part["minimum"], part["maximum"]
    raise AssertionError(f"no bounds in {schema}")
