"""The MCP server (`tsm mcp`): the knowledge base as tools for any MCP client.

    tools.py       one call on the core per tool (through the daemon when it runs) →
                   (structured JSON, short text); no SDK
    excerpt.py     line ranges and sections of a document for `get` (pure)
    server.py      the SDK binding: tool schemas and descriptions, errors, stdio and HTTP
    http_guard.py  Host/Origin checks (DNS rebinding) and the bearer token for HTTP
    http_token.py  that token: TSM_MCP_TOKEN, or one made once and kept in the state dir
    limits.py      the bounds of HTTP clients (request deadline, connections, sessions)
    http_limits.py their enforcement in uvicorn and the SDK

Nothing here is imported by the rest of tsm; the SDK loads only when `tsm mcp` runs.
"""
