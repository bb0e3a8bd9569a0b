"""Bounds on what clients of `tsm mcp --http` may hold, so that slow, trickling or idle ones
cannot keep a real client out. uvicorn waits for headers and bodies
forever and caps nothing by default; the MCP SDK keeps 10,000 sessions for 30 minutes each
and answers 503 past that. Here:

- a request (headers and body) must arrive whole within `request_seconds` of its first
  byte, the first one of a connection within `request_seconds` of the connection;
- at most `max_connections` connections: one more evicts the oldest that is waiting on its
  client (no request yet, or a request still arriving); when every one is being answered,
  the newcomer gets 503;
- at most `max_sessions` MCP sessions: a new one ends the least recently used idle session
  (no request in flight) with the DELETE the protocol defines, instead of a 503.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from .http_guard import ASGIApp, Message, Receive, Scope, Send
from .limits import Limits

log = logging.getLogger("tsm.mcp")
SESSION_HEADER = b"mcp-session-id"
_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 29\r\nconnection: close\r\n\r\ntoo many connections, retry\r\n"
)


class ConnectionTable:
    """The open connections of one server, oldest first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: OrderedDict[GuardedProtocol, None] = OrderedDict()

    def admit(self, newcomer: GuardedProtocol) -> bool:
        """Make room for `newcomer` by closing the oldest connection that waits on its
        client; False when every open one is being answered (the newcomer is refused)."""
        if len(self.open) >= self.limit:
            victim = next((c for c in self.open if c.waiting_on_client()), None)
            if victim is None:
                return False
            log.info("closed the oldest idle connection: %d open", len(self.open))
            victim.close()
        self.open[newcomer] = None
        return True


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline per request and a place in a ConnectionTable.
    `table` and `seconds` are set on the subclass `protocol_class` makes."""

    table: ConnectionTable
    seconds: float

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._deadline: asyncio.TimerHandle | None = None
        self._admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        if not self.table.admit(self):
            log.warning("refused a connection: %d open, all busy", len(self.table.open))
            self.transport.write(_REFUSED)
            self.transport.close()
            return
        self._admitted = True
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.waiting_on_client():
            self._arm()
        super().data_received(data)
        if self._deadline is not None and not self.waiting_on_client():
            self._deadline.cancel()
            self._deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._admitted:
            self.table.open.pop(self, None)
        super().connection_lost(exc)

    def waiting_on_client(self) -> bool:
        """No request yet, the last one answered, or one still arriving; False while the
        server answers a request that arrived whole (a search, an SSE stream)."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or cycle.more_body

    def close(self) -> None:
        self.table.open.pop(self, None)
        self.transport.close()

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.seconds, self._expire)

    def _expire(self) -> None:
        self._deadline = None
        if self.waiting_on_client() and not self.transport.is_closing():
            log.info("closed a connection: no whole request within %g s", self.seconds)
            self.close()


def protocol_class(limits: Limits) -> type[GuardedProtocol]:
    """A GuardedProtocol for one server: its own table of connections."""
    return type(
        "ServerProtocol",
        (GuardedProtocol,),
        {"table": ConnectionTable(limits.max_connections), "seconds": limits.request_seconds},
    )


@dataclass
class SessionUse:
    last_used: float
    in_flight: int = 0
    protocol_version: bytes | None = None


class SessionCap:
    """ASGI middleware in front of the SDK's session manager: keeps at most `limit`
    sessions by ending the least recently used idle one when a client opens another."""

    def __init__(self, app: ASGIApp, limit: int, idle_seconds: float) -> None:
        self.app = app
        self.limit = limit
        self.idle_seconds = idle_seconds
        self.sessions: OrderedDict[str, SessionUse] = OrderedDict()  # least recent first

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        session = headers.get(SESSION_HEADER, b"").decode("latin-1")
        if not session:
            if scope.get("method") == "POST":
                await self._make_room(scope)
            opened: list[SessionUse] = []
            try:
                await self.app(scope, receive, self._watch_opening(send, opened))
            finally:
                for new in opened:  # its opening request is answered: idle from now
                    new.in_flight -= 1
                    new.last_used = time.monotonic()
            return
        use = self.sessions.get(session)
        if use is None:  # unknown or ended: the SDK answers 404
            await self.app(scope, receive, send)
            return
        self.sessions.move_to_end(session)
        use.in_flight += 1
        use.protocol_version = headers.get(b"mcp-protocol-version", use.protocol_version)
        status: list[int] = []
        try:
            await self.app(scope, receive, _status_into(send, status))
        finally:
            use.in_flight -= 1
            use.last_used = time.monotonic()
            if scope.get("method") == "DELETE" or status[:1] == [404]:
                self.sessions.pop(session, None)

    def _watch_opening(self, send: Send, opened: list[SessionUse]) -> Send:
        """`send`, noting the session a successful opening request creates (busy until
        that request is answered)."""

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers", []):
                    if name.lower() == SESSION_HEADER:
                        use = SessionUse(time.monotonic(), in_flight=1)
                        self.sessions[value.decode("latin-1")] = use
                        opened.append(use)
            await send(message)

        return watched

    async def _make_room(self, scope: Scope) -> None:
        now = time.monotonic()
        for session, use in list(self.sessions.items()):
            if use.in_flight == 0 and now - use.last_used > self.idle_seconds:
                del self.sessions[session]  # the SDK has ended it already
        while len(self.sessions) >= self.limit:
            idle = next((s for s, use in self.sessions.items() if use.in_flight == 0), None)
            if idle is None:
                return  # all busy: each holds a connection, so ConnectionTable bounds them
            await self._end(idle, self.sessions.pop(idle), scope)

    async def _end(self, session: str, use: SessionUse, scope: Scope) -> None:
        """End `session` as its client would: DELETE with its id, through the SDK."""
        log.info("ended the least recently used idle session: %d open", len(self.sessions) + 1)
        headers = [(SESSION_HEADER, session.encode("latin-1"))]
        if use.protocol_version:
            headers.append((b"mcp-protocol-version", use.protocol_version))
        delete = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}

        async def no_body() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        await self.app(delete, no_body, discard)


def _status_into(send: Send, status: list[int]) -> Send:
    async def noted(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        await send(message)

    return noted
