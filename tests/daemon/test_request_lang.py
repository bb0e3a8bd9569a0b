"""`--lang ja|en` keeps the passages of one language (Japanese: they hold kana). It is one
declared field of the request, so the command line (in-process and forwarded to the
daemon), its --help, the daemon's wire and the MCP tool all take it, and agree."""

from __future__ import annotations

import sys
from typing import Any

import anyio
from daemon_harness import Harness
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The sample vault's notes written in Japanese; every other note is in English.
JAPANESE = {"daily/2026-03-15.md", "research/lora-modules.md"}
QUERY = ("LoRa tracker 狩猟", "--fts-only", "-k", "50")  # hits in both languages


def paths(result: dict[str, Any]) -> set[str]:
    return {hit["source"]["path"] for hit in result["results"]}


def test_lang_keeps_one_language_everywhere(shared_daemon: Harness, in_process: Harness) -> None:
    both = paths(in_process.cli("search", *QUERY, "-f", "json").json())
    assert both & JAPANESE and both - JAPANESE, both  # the query finds both languages

    config = shared_daemon.request({"v": 2, "op": "ping", "args": {}})["result"]["config"]
    for lang in ("ja", "en"):
        local = in_process.cli("search", *QUERY, "--lang", lang, "-f", "json")
        assert local.code == 0, local.err
        found = paths(local.json())
        assert found == (both & JAPANESE if lang == "ja" else both - JAPANESE), (lang, found)
        assert local.json()["filters"]["lang"] == lang

        forwarded = shared_daemon.cli("search", *QUERY, "--lang", lang, "-f", "json")
        assert forwarded.code == 0 and paths(forwarded.json()) == found, forwarded.err
        wire = shared_daemon.request(
            {
                "v": 2,
                "op": "search",
                "config": config,
                "args": {"request": {"text": QUERY[0], "mode": "fts", "top_k": 50, "lang": lang}},
            }
        )
        assert wire["ok"] is True and paths(wire["result"]) == found, wire
        assert (
            paths(
                _mcp_search(
                    shared_daemon, {"query": QUERY[0], "mode": "fts", "top_k": 50, "lang": lang}
                )
            )
            == found
        )


def test_lang_is_offered_and_checked(in_process: Harness) -> None:
    shown = in_process.cli("search", "--help")
    assert shown.code == 0 and "--lang {ja,en}" in shown.out, shown.out
    wrong = in_process.cli("search", "git", "--lang", "fr", "-f", "json")
    assert wrong.code == 1 and wrong.error()["kind"] == "user_error", wrong.err
    assert "--lang" in wrong.error()["error"]


def _mcp_search(daemon: Harness, arguments: dict[str, Any]) -> dict[str, Any]:
    """One `search` call through `tsm mcp` (which asks the daemon), after checking that the
    tool's schema offers `lang` with its two values."""
    found: dict[str, Any] = {}

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tsm", "mcp", "--no-warmup"], env=daemon.env
        )
        with anyio.fail_after(300):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    schema = next(t for t in listed.tools if t.name == "search").input_schema
                    offered = schema["properties"]["lang"]["anyOf"][0]["enum"]
                    assert offered == ["ja", "en"], schema["properties"]["lang"]
                    result = await session.call_tool("search", arguments)
                    assert not result.is_error, result.content
                    found.update(result.structured_content or {})

    anyio.run(main)
    return found
