"""The bounds of `tsm mcp --http` (http_limits.py enforces them), apart from the server so
that the CLI declares its flags' defaults from them without loading uvicorn."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """The bounds; the defaults suit one user's clients and a small team's."""

    request_seconds: float = 10.0
    max_connections: int = 64
    max_sessions: int = 100
    # The SDK's own default: a session left alone this long ends (its client re-initializes).
    session_idle_seconds: float = 30 * 60
