"""MCP `get` and `search` never hand out a file that a symlink in the vault points at outside
it: the official MCP client over stdio against a real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SECRET = "grizzlephant"  # only the file outside the vault holds it


def test_mcp_get_and_search_never_return_a_linked_outside_file(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "plain.md").write_text("# Plain\n\nan ordinary note\n")
    secret = tmp_path / "secret.md"
    secret.write_text(f"# Secret\n\n{SECRET}\n")
    secret.chmod(0o600)
    (vault / "notes" / "secret.md").symlink_to(secret)
    env = {**os.environ, "TSM_INDEX_ROOT": str(vault), "TSM_EMBEDDER": "none"}
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", "index", "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert [s["path"] for s in json.loads(proc.stdout)["skipped"]] == ["notes/secret.md"]

    replies: list[str] = []

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "tsm", "mcp"], env=env)
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for tool, args in (
                        ("get", {"path": "notes/secret.md"}),
                        ("search", {"query": "secret"}),
                        ("list_documents", {}),
                        ("search", {"query": SECRET}),  # echoed as `query`, found nowhere
                    ):
                        result: Any = await session.call_tool(tool, args)
                        replies.append(json.dumps(result.model_dump(), ensure_ascii=False))

    anyio.run(main)
    get, search, listing, by_secret = replies
    assert json.loads(get)["is_error"] is True
    assert all(SECRET not in reply for reply in (get, search, listing))
    assert json.loads(by_secret)["structured_content"]["results"] == []
    assert "notes/plain.md" in listing and "notes/secret.md" not in listing
