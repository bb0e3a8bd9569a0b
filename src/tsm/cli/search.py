"""`tsm search`."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UserError
from .runtime import daemon_backend, emit, int_in, load_settings

MAX_TOP_K = 10_000  # search.query.MAX_TOP_K, which this module must not import (it is heavy)


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "search",
        parents=[parent],
        help="hybrid search over the index",
        description="Search the index (hybrid FTS5 BM25 + vectors, fused by RRF).",
    )
    p.add_argument("query_pos", nargs="*", metavar="QUERY", help="the query")
    p.add_argument("-q", "--query", help="the query (instead of the positional argument)")
    p.add_argument(
        "-k",
        "--top-k",
        type=int_in(1, MAX_TOP_K),
        default=None,
        help="results to return (default 10)",
    )
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--fts-only", action="store_true", help="keyword search only")
    modes.add_argument("--vec-only", action="store_true", help="vector search only")
    p.add_argument(
        "--fallback",
        choices=("error", "fts-only"),
        default="error",
        help="when vectors are unavailable: fail (exit 2) or return keyword results",
    )
    p.add_argument(
        "--include-content",
        type=int_in(0, MAX_TOP_K),
        default=0,
        metavar="N",
        help="add the whole document text to the top N results",
    )
    p.add_argument("--after", metavar="DATE", help="only documents dated on/after YYYY[-MM[-DD]]")
    p.add_argument("--before", metavar="DATE", help="only documents dated on/before YYYY[-MM[-DD]]")
    p.add_argument("--recent", metavar="SPAN", help="only the last 30d, 2w, 3m …")
    p.add_argument("--year", metavar="YYYY", help="only documents dated in that year")
    p.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="PREFIX",
        help="only paths under this relative prefix (repeatable, OR)",
    )
    p.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="only documents with this tag (repeatable, all must match)",
    )
    p.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="TYPE",
        help="markdown, pdf, text or session (repeatable)",
    )
    p.set_defaults(handler=run)


def today(environ: Mapping[str, str] | None = None) -> dt.datetime:
    """Now, or TSM_NOW (ISO date/time) so results are reproducible in tests."""
    fixed = (os.environ if environ is None else environ).get("TSM_NOW")
    if fixed:
        try:
            return dt.datetime.fromisoformat(fixed)
        except ValueError:
            raise UserError(
                f"TSM_NOW={fixed!r} is not an ISO date", "example: 2026-03-18"
            ) from None
    return dt.datetime.now()


def search_flags(args: argparse.Namespace, settings: Any) -> dict[str, Any]:
    """build_query's keyword arguments from the command line."""
    text = args.query if args.query is not None else " ".join(args.query_pos)
    if args.query is not None and args.query_pos:
        raise UserError("give the query either as an argument or with -q, not both")
    mode = "fts" if args.fts_only else "vector" if args.vec_only else "hybrid"
    return {
        "text": text,
        "mode": mode,
        "top_k": args.top_k if args.top_k is not None else settings.get("search.top_k"),
        "fallback": args.fallback,
        "after": args.after,
        "before": args.before,
        "recent": args.recent,
        "year": args.year,
        "paths": args.path,
        "tags": args.tag,
        "types": args.type,
        "include_content": args.include_content,
    }


def run_forwarded(
    args: argparse.Namespace,
    settings: Any,
    environ: Mapping[str, str],
    render: Callable[[dict[str, Any], dt.datetime, str], str],
) -> str:
    """A search command line the thin client forwarded to the daemon (cli/entry.py): the
    same flags and clock as `run`, rendered by the daemon's `render(flags, now, format)`."""
    return render(search_flags(args, settings), today(environ), args.output)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    flags = search_flags(args, settings)
    now = today()
    # Through the daemon when it runs (started on demand if the index exists), which also
    # renders the output: this path imports no query parser, renderer, numpy or model.
    autostart = settings.get("daemon.autostart") and settings.db_path.exists()
    daemon = daemon_backend(settings, autostart=autostart)
    if daemon is not None:
        from ..daemon.client import Unavailable

        try:
            print(daemon.search_rendered(flags, now, args.output))
            return 0
        except Unavailable:
            pass  # down, restarting or configured differently: search in-process
    from ..backend import LocalBackend
    from ..render import human_format, json_format
    from ..search.query import build_query

    query = build_query(flags.pop("text"), today=now.date(), **flags)
    result = LocalBackend(settings, now=now).search(query)
    if args.output == "json":
        emit(args, json_format.search_to_dict(result), "")
    else:
        emit(args, None, human_format.search_text(result))
    return 0
