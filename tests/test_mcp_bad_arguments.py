"""Wrongly typed MCP tool arguments are tool errors the model can read, never system errors
: huge, negative and fractional numbers, strings and objects where numbers
or ids are expected, for every tool that takes one; the server keeps answering."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HUGE = 10**30
WRONG = [HUGE, -HUGE, -1, 0, 1.5, "abc", "", [1], {"n": 1}, True]
NUMBERS = {
    "search": ("top_k", "include_content", "year"),
    "get": ("id", "start_line", "end_line", "max_chars"),
    "list_documents": ("limit", "offset"),
    "list_tags": ("limit",),
}
BASE = {
    "search": {"query": "git"},
    "get": {"path": "notes/git-install.md"},
    "list_documents": {},
    "list_tags": {},
}


def test_wrong_numbers_and_ids_are_tool_errors(
    sample_index_template: Path, sample_store: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    shutil.copytree(sample_index_template, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_AUTOSTART": "0"}
    env |= sample_store  # on PostgreSQL, a copy of the sample index's database
    failures: list[str] = []

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tsm", "mcp", "--no-warmup"], env=env
        )
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for tool, names in NUMBERS.items():
                        for name in names:
                            for value in WRONG:
                                args: dict[str, Any] = {**BASE[tool], name: value}
                                if name == "id":
                                    args.pop("path")
                                result = await session.call_tool(tool, args)
                                text = result.content[0].text if result.content else ""
                                if result.is_error and (
                                    "system_error" in text or "Traceback" in text
                                ):
                                    failures.append(f"{tool} {name}={value!r}: {text[:160]}")
                    after = await session.call_tool("search", {"query": "git", "top_k": 1})
                    assert not after.is_error

    anyio.run(main)
    assert not failures, "\n".join(failures)
