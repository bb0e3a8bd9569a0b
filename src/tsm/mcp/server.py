"""The MCP binding: registers the five tools (descriptions written for a model) on the SDK's
MCPServer, turns TsmError into tool errors, and runs stdio or streamable HTTP. Imported only
by `tsm mcp`, because the SDK alone takes ~0.6 s to import."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .. import __version__
from ..config import Settings
from ..errors import TsmError, UnsafePath
from ..logfile import OneLineFormatter, private_log_handler
from ..models import DOCUMENT_TYPES
from ..workspace import StatePaths
from .excerpt import DEFAULT_MAX_CHARS
from .search_schema import with_search_signature
from .tools import Reply, Tools

if TYPE_CHECKING:
    from .http_limits import Limits

log = logging.getLogger("tsm.mcp")

DocType = Literal[DOCUMENT_TYPES]  # type: ignore[valid-type]
# Core threads of the HTTP server, each with its own connection to the index: clients'
# searches run side by side instead of queueing behind one another (bench/pg_team_server.py).
HTTP_WORKERS = 8
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

INSTRUCTIONS = """\
The Space Memory (tsm) searches the user's own local knowledge base: Markdown notes, PDFs, \
plain text and past Claude Code sessions, in English and Japanese. Search it before answering \
questions about the user's projects, decisions, notes or earlier work; read a hit with `get` \
before relying on its details; cite every fact as `path > section`. Never invent content, \
paths or quotes that the tools did not return."""

SEARCH_DOC = """\
Search the user's local knowledge base (Markdown notes, PDFs, text files, past Claude Code \
sessions; English and Japanese) and return the best-matching passages.

When: call this first whenever the user's own notes, decisions, research or earlier sessions \
may answer the question, before answering from general knowledge. Use short, keyword-rich \
queries in the language of the notes. Dates inside the query ("last month", "in June", \
"先月", "去年") become date filters by themselves.

Modes: hybrid (default: keywords + meaning); fts (exact words: names, error messages, code \
identifiers); vector (paraphrases and concepts).

Reading results: `score` is a Reciprocal Rank Fusion score, usually 0.01-0.035. It is relative: \
compare hits within one answer, never against a fixed threshold or across queries. \
`score_breakdown.fts` and `score_breakdown.vector` show which signal found the hit (null: the \
signal was not used; 0: it did not find this hit); a hit found by both is stronger. `snippet` \
is up to 200 characters around the match, `section` the heading path.

Citing: cite as `source.path > section`, e.g. `notes/git-install.md > Installing Git > From \
source`.

Low confidence: when `warnings` is not empty, `source.stale` is true (the file changed since \
it was indexed), `source.status` is outdated/superseded/rejected, or only one weak signal \
matched, say that the evidence is weak. If nothing relevant comes back, say the notes do not \
cover it; never invent content.

Next: call `get` with the hit's `source.path` and `section` to read the passage in full before \
quoting details. If vector search is unavailable (no model, nothing embedded yet) the call \
returns keyword results and says so in `warnings`; fallback="error" makes it fail instead."""

GET_DOC = """\
Read one document of the knowledge base: its metadata (title, type, tags, status, dates, \
sections, links) and its text: whole, a line range (start_line/end_line, 1-based, inclusive) \
or one section (a Markdown heading path such as "Setup > Linux", or just "Linux").

When: after `search`, to read a hit in full before quoting or relying on it: pass `path` = the \
hit's `source.path` and `section` = the hit's `section` (or `id` = `source.document_id`). Long \
texts are cut at max_chars on a line boundary: then `truncated` is true and `next_start_line` \
says where to continue. An unknown path fails with the closest indexed paths ("did you mean"); \
retry with one of those rather than guessing. Quote only what this returns; cite as \
`path > section`."""

LIST_DOC = """\
List indexed documents (id, path, title, type, tags, date, status), sorted by path and paged \
with limit/offset; `total` is the count before paging. Use it to browse what exists (all \
PDFs, everything under `daily/`); to find content, use `search`."""

TAGS_DOC = """\
All tags of the knowledge base with their document counts, most used first. Use it to learn \
the vocabulary for the `tag` filter of `search`."""

STATUS_DOC = """\
Health of the index: documents per type, chunks, embedding model, chunks still without \
vectors, schema version, index root, and this server's warm-up state. Call it when results \
look wrong or empty, to tell "not indexed" from "not found". When chunks_without_vectors > 0 \
or vectors_stale is true, hybrid/vector results are incomplete: say so, or use mode="fts"."""


def build_server(tools: Tools, *, warm_up: bool = True) -> MCPServer[Any]:
    """An MCPServer whose tools each make one call on `tools`."""
    started: list[bool] = []
    store_key = tools.settings.store_key

    def call(operation: Callable[[], Reply]) -> CallToolResult:
        return _call(operation, store_key)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        # Runs inside the transport, after the SDK has moved fd 1 away from the protocol
        # stream, so nothing the model loader prints can corrupt stdio. HTTP runs it per
        # session; the list makes it happen once.
        if warm_up and not started:
            started.append(True)
            tools.warm_up()
        yield None

    server: MCPServer[Any] = MCPServer(
        name="tsm",
        title="The Space Memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
    )

    @server.tool(name="search", title="Search notes", description=SEARCH_DOC, annotations=READ_ONLY)
    @with_search_signature  # its arguments: the request's declaration (search_schema.py)
    def search(**arguments: Any) -> CallToolResult:
        return call(lambda: tools.search(arguments))

    @server.tool(name="get", title="Read a document", description=GET_DOC, annotations=READ_ONLY)
    def get(
        path: Annotated[
            str | None,
            Field(
                description="Path relative to the index root, as in search results' source.path."
            ),
        ] = None,
        id: Annotated[
            int | None, Field(description="Or the numeric document id (source.document_id).")
        ] = None,
        start_line: Annotated[
            int | None, Field(ge=1, description="First line to return (1-based).")
        ] = None,
        end_line: Annotated[
            int | None, Field(ge=1, description="Last line to return (inclusive).")
        ] = None,
        section: Annotated[
            str | None,
            Field(
                description="A Markdown heading path, e.g. "
                '"Installing Git > From source" or "From '
                'source".'
            ),
        ] = None,
        max_chars: Annotated[
            int, Field(ge=200, le=200_000, description="Cut the text after this many characters.")
        ] = DEFAULT_MAX_CHARS,
    ) -> CallToolResult:
        return call(
            lambda: tools.get(
                path,
                id,
                start_line=start_line,
                end_line=end_line,
                section=section,
                max_chars=max_chars,
            )
        )

    @server.tool(
        name="list_documents", title="List documents", description=LIST_DOC, annotations=READ_ONLY
    )
    def list_documents(
        type: Annotated[DocType | None, Field(description="Only this document type.")] = None,
        path_prefix: Annotated[
            str | None, Field(description='Only paths under this folder, e.g. "daily/".')
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Rows to return.")] = 100,
        offset: Annotated[int, Field(ge=0, description="Rows to skip.")] = 0,
    ) -> CallToolResult:
        return call(lambda: tools.list_documents(type, path_prefix, limit, offset))

    @server.tool(name="list_tags", title="List tags", description=TAGS_DOC, annotations=READ_ONLY)
    def list_tags(
        limit: Annotated[int, Field(ge=1, le=5000, description="Tags to return.")] = 200,
    ) -> CallToolResult:
        return call(lambda: tools.list_tags(limit))

    @server.tool(name="status", title="Index status", description=STATUS_DOC, annotations=READ_ONLY)
    def status() -> CallToolResult:
        return call(tools.status)

    return server


def _call(operation: Callable[[], Reply], store_key: str | None = None) -> CallToolResult:
    """Run one tool; a TsmError (or a disk, lock or corruption error of the index, named by
    core/failures.py) becomes a tool error (isError) the model can read and act on, with
    the same message and hint as the CLI prints. The server keeps running."""
    from ..core.failures import translate

    try:
        reply = operation()
    except TsmError as exc:
        raise _tool_error(exc) from exc
    except Exception as exc:
        known = translate(exc, store_key)
        if known is not None:
            raise _tool_error(known) from exc
        log.exception("tool failed")
        raise ToolError(
            f"system_error: unexpected {type(exc).__name__}: {exc} (hint: see "
            "the MCP log under <state dir>/logs/mcp.log)"
        ) from exc
    return CallToolResult(
        content=[TextContent(type="text", text=reply.text)], structured_content=reply.data
    )


def _tool_error(exc: TsmError) -> ToolError:
    hint = f" (hint: {exc.hint})" if exc.hint else ""
    return ToolError(f"{exc.kind}: {exc.message}{hint}")


def setup_logging(settings: Settings) -> None:
    """Warnings to stderr (clients such as Claude Desktop keep it in their logs), everything
    from INFO to <state dir>/logs/mcp.log; never stdout, which carries the protocol. Done
    before MCPServer() so the SDK's own logging.basicConfig finds handlers and adds none."""
    root = logging.getLogger()
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    err.setFormatter(OneLineFormatter("tsm mcp: %(levelname)s %(message)s"))
    root.addHandler(err)
    if settings.state_dir.is_dir():  # an index exists; do not create state dirs elsewhere
        logs = StatePaths(settings.state_dir).logs
        try:
            root.addHandler(
                private_log_handler(
                    settings.state_dir,
                    "mcp.log",
                    "%(asctime)s %(process)d %(levelname)s %(name)s %(message)s",
                )
            )
        except (OSError, UnsafePath) as exc:
            log.warning("cannot write %s: %s", logs / "mcp.log", exc)
    root.setLevel(logging.DEBUG if os.environ.get("TSM_DEBUG") == "1" else logging.INFO)


def run_stdio(settings: Settings, *, warm_up: bool = True) -> int:
    """Serve one client over stdin/stdout until it closes stdin."""
    setup_logging(settings)
    tools = Tools(settings)
    log.info("tsm mcp (stdio) starting; index root %s", settings.index_root)
    try:
        build_server(tools, warm_up=warm_up).run("stdio")
    finally:
        tools.close()
    return 0


def run_http(
    settings: Settings,
    *,
    host: str,
    port: int,
    allow_origins: list[str],
    allow_hosts: list[str],
    limits: Limits | None = None,
    warm_up: bool = True,
) -> int:
    """Serve streamable HTTP at http://host:port/mcp for any number of clients, within
    `limits` (http_limits.py)."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from .http_guard import Policy, RequestGuard
    from .http_limits import Limits, SessionCap, protocol_class
    from .http_token import bearer_token

    if settings.store_url:  # its clients are other people (core/serving.py)
        from ..core.serving import refuse_serving_private

        refuse_serving_private(settings, "tsm mcp --http")
    setup_logging(settings)
    token = bearer_token(settings.state_dir)
    if token.replaced:
        log.warning("%s; a new token was made (`tsm mcp token` shows it)", token.replaced)
    tools = Tools(settings, workers=HTTP_WORKERS)
    tools.transport = "streamable-http"
    server = build_server(tools, warm_up=False)
    # RequestGuard owns the Host/Origin rule (403 for both, one place, tested); the SDK's
    # own check would answer a foreign Host with 421 and needs the same lists twice.
    limits = limits or Limits()
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=limits.session_idle_seconds,
        # SessionCap keeps max_sessions; busy sessions past it each hold a connection.
        max_sessions=limits.max_sessions + limits.max_connections,
    )
    policy = Policy.build(host, token.value, allow_hosts, allow_origins)
    if warm_up:
        tools.warm_up()
    shown = f"[{host}]" if ":" in host else host
    where = "TSM_MCP_TOKEN" if token.source == "TSM_MCP_TOKEN" else "`tsm mcp token` shows it"
    print(
        f"tsm mcp: serving http://{shown}:{port}/mcp (index root {settings.index_root}); "
        f"clients send `Authorization: Bearer <token>` ({where})",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        RequestGuard(SessionCap(app, limits.max_sessions, limits.session_idle_seconds), policy),
        host=host,
        port=port,
        http=protocol_class(limits),
        log_config=None,
        access_log=False,
        lifespan="on",
    )
    try:
        uvicorn.Server(config).run()
    finally:
        tools.close()
    return 0
