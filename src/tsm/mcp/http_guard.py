"""The HTTP transport's front door, checked before the MCP SDK sees a request: the Host and
Origin headers must be loopback or explicitly allowed (DNS-rebinding protection), and every
request must carry the bearer token (http_token.py), on loopback too: loopback is shared by
every user of the machine."""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("tsm.mcp")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost names; never a wildcard such as 0.0.0.0."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header, without its port ("[::1]:8765" → "::1")."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header[1:]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass(frozen=True)
class Policy:
    """Who may talk to the server. Loopback hosts and origins are always allowed."""

    token: str
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        bind_host: str,
        token: str,
        hosts: Iterable[str] = (),
        origins: Iterable[str] = (),
    ) -> Policy:
        """Also allow the bound address itself, so `--host 192.168.1.5` works when clients
        use that address; a wildcard bind (0.0.0.0) needs its names given with --allow-host."""
        names = {host_name(h) for h in hosts if h.strip()}
        if bind_host not in ("0.0.0.0", "::", ""):
            names.add(host_name(bind_host))
        return cls(
            token,
            frozenset(names),
            frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip()),
        )

    def check(self, headers: dict[str, str]) -> tuple[int, str] | None:
        """None when the request may pass, else (HTTP status, reason)."""
        host = headers.get("host", "")
        if not host or not (is_loopback(host_name(host)) or host_name(host) in self.allowed_hosts):
            return 403, f"Host {host!r} is not allowed (see tsm mcp --allow-host)"
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin):
            return 403, f"Origin {origin!r} is not allowed (see tsm mcp --allow-origin)"
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        # compare_digest: the time taken must not reveal how much of a guess was right. The
        # answer is the same for no token and a wrong one, and says nothing of either.
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode("utf-8"), self.token.encode("utf-8")
        ):
            return 401, "a valid bearer token is required (`tsm mcp token` shows it)"
        return None

    def origin_allowed(self, origin: str) -> bool:
        normal = origin.strip().rstrip("/").lower()
        if normal in self.allowed_origins:
            return True
        parts = urlsplit(normal)
        return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


class RequestGuard:
    """ASGI middleware applying a Policy to every HTTP request; lifespan events pass."""

    def __init__(self, app: ASGIApp, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        refusal = self.policy.check(headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, reason = refusal
        log.warning("refused %s %s: %s", scope.get("method"), scope.get("path"), reason)
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        body = (reason + "\n").encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    *extra,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
