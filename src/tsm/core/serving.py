"""What a server for other people checks before it starts (`tsm mcp --http`)."""

from __future__ import annotations

from ..config import Settings


def refuse_serving_private(settings: Settings, what: str) -> None:
    """A server for other people reads as the member who runs it, so it would show every
    client that member's unshared transcripts in a team store: refuse while there are any
    (store/scope.py)."""
    from ..store import scope
    from ..store.connect import open_store

    conn = open_store(settings)
    try:
        scope.refuse_serving_private(conn, what)
    finally:
        conn.close()
