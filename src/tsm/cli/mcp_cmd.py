"""`tsm mcp`: serve the index to MCP clients over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
from typing import Any

from ..core.request import int_in
from ..errors import SystemFailure
from .runtime import load_settings

DEFAULT_PORT = 8765


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve search, get, list_documents, list_tags and status to MCP clients",
        description="Run an MCP server over the index: stdio for one client (Claude Desktop, "
        "Claude Code, Cursor …), or --http for a long-lived shared server.",
        epilog="HTTP binds to 127.0.0.1 and refuses requests whose Host or Origin is not "
        "loopback or allowed (403). Beyond loopback it requires TSM_MCP_TOKEN, sent "
        "by clients as `Authorization: Bearer <token>`.",
    )
    p.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind with --http (default 127.0.0.1)"
    )
    p.add_argument(
        "--port",
        type=int_in(1, 65535),
        default=DEFAULT_PORT,
        help=f"port to bind with --http (default {DEFAULT_PORT})",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also accept this browser Origin, e.g. https://app.example (repeatable)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host header name, e.g. nas.local (repeatable)",
    )
    p.add_argument(
        "--no-warmup",
        action="store_true",
        help="load the embedding model on the first search instead of at start",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        from ..mcp import server
    except ImportError as exc:  # a broken or partial install: say what to do, not a traceback
        raise SystemFailure(
            f"the MCP server cannot start: {exc}", "reinstall tsm, or `pip install 'mcp>=2.3,<3'`"
        ) from None
    settings = load_settings()
    if args.http:
        return server.run_http(
            settings,
            host=args.host,
            port=args.port,
            allow_origins=args.allow_origin,
            allow_hosts=args.allow_host,
            warm_up=not args.no_warmup,
        )
    return server.run_stdio(settings, warm_up=not args.no_warmup)
