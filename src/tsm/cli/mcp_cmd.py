"""`tsm mcp`: serve the index to MCP clients over stdio (default) or streamable HTTP, and
`tsm mcp token`: the bearer token HTTP clients send."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..commandline.parser import int_in
from ..errors import SystemFailure, UserError
from ..mcp.limits import Limits
from .runtime import load_settings

DEFAULT_PORT = 8765
DEFAULT_LIMITS = Limits()


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve search, get, list_documents, list_tags and status to MCP clients",
        description="Run an MCP server over the index: stdio for one client (Claude Desktop, "
        "Claude Code, Cursor …), or --http for a long-lived shared server.",
        epilog="HTTP binds to 127.0.0.1, refuses requests whose Host or Origin is not "
        "loopback or allowed (403), and answers 401 to any request without "
        "`Authorization: Bearer <token>`: TSM_MCP_TOKEN, else the token `tsm mcp token` "
        "shows (made on first use, kept 0600 in the state dir).",
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
        "--max-connections",
        type=int_in(1, 100_000),
        default=DEFAULT_LIMITS.max_connections,
        metavar="N",
        help="with --http: connections held at once; one more closes the oldest idle one "
        f"(default {DEFAULT_LIMITS.max_connections})",
    )
    p.add_argument(
        "--max-sessions",
        type=int_in(1, 100_000),
        default=DEFAULT_LIMITS.max_sessions,
        metavar="N",
        help="with --http: MCP sessions kept; one more ends the least recently used idle "
        f"one (default {DEFAULT_LIMITS.max_sessions})",
    )
    p.add_argument(
        "--request-timeout",
        type=seconds_in(0.1, 3600),
        default=DEFAULT_LIMITS.request_seconds,
        metavar="SECONDS",
        help="with --http: a request's headers and body must arrive within this "
        f"(default {DEFAULT_LIMITS.request_seconds:g})",
    )
    p.add_argument(
        "--no-warmup",
        action="store_true",
        help="load the embedding model on the first search instead of at start",
    )
    p.set_defaults(handler=run)
    actions = p.add_subparsers(dest="mcp_action", metavar="ACTION", parser_class=type(p))
    token = actions.add_parser(
        "token",
        parents=[parent],
        help="print the bearer token `tsm mcp --http` requires (made on first use)",
        description="Print the bearer token HTTP clients must send as "
        "`Authorization: Bearer <token>`: TSM_MCP_TOKEN when set, else the one kept in "
        "<state dir>/mcp-token (0600), made on first use.",
        epilog='Claude Code: claude mcp add --transport http --header "Authorization: Bearer '
        '$(tsm mcp token -f text)" tsm http://127.0.0.1:8765/mcp',
    )
    token.add_argument(
        "--new",
        action="store_true",
        help="replace the kept token with a new one (clients then need the new one)",
    )
    token.set_defaults(handler=show_token)


def seconds_in(low: float, high: float) -> Any:
    """An argparse `type` for a number of seconds in [low, high] (nan and inf are not)."""

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 30 else None
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected seconds from {low:g} to {high:g}, got {text!r}"
            )
        return value

    parse.__name__ = "seconds"
    return parse


def show_token(args: argparse.Namespace) -> int:
    """The token alone on stdout in text (for `$(tsm mcp token -f text)`), or JSON."""
    from ..mcp.http_token import TOKEN_ENV, bearer_token
    from .runtime import emit

    settings = load_settings()
    if args.new and TOKEN_ENV in os.environ:
        raise UserError(f"{TOKEN_ENV} is set: the token is yours to change there")
    token = bearer_token(settings.state_dir, renew=args.new)
    if token.replaced:
        print(f"tsm: {token.replaced}; a new token was made", file=sys.stderr)
    data = {"token": token.value, "source": token.source, "created": token.created}
    emit(args, data, token.value)
    return 0


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
            limits=Limits(
                request_seconds=args.request_timeout,
                max_connections=args.max_connections,
                max_sessions=args.max_sessions,
            ),
            warm_up=not args.no_warmup,
        )
    return server.run_stdio(settings, warm_up=not args.no_warmup)
