"""The bearer token `tsm mcp --http` requires of every client. Loopback is shared by every
user of the machine, so a server without one hands the index (notes and session
transcripts) to any local process. TSM_MCP_TOKEN when set (a team's shared server),
otherwise one generated on first use and kept in <state dir>/mcp-token: 0600, written only
inside the state dir and never through a link; `tsm mcp token` shows it. No MCP SDK here."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import UnsafePath, UserError
from ..statedir import create_private, private_dir, read_secret, write_private

TOKEN_ENV = "TSM_MCP_TOKEN"
TOKEN_FILE = "mcp-token"
MIN_TOKEN_CHARS = 16
TOKEN_BYTES = 32  # 43 URL-safe characters: 256 random bits


@dataclass(frozen=True)
class BearerToken:
    """The token in force, and where it comes from (TOKEN_ENV or the file's path)."""

    value: str
    source: str
    created: bool = False  # generated just now (first use, or the old one was unsafe)
    replaced: str | None = None  # why a token file that was there is not used


def token_file(state_dir: Path) -> Path:
    return state_dir / TOKEN_FILE


def bearer_token(
    state_dir: Path, environ: Mapping[str, str] = os.environ, *, renew: bool = False
) -> BearerToken:
    """TSM_MCP_TOKEN, or the state dir's token (generated when there is none, when the one
    there is unsafe or malformed, or when `renew` asks for a new one)."""
    configured = environ.get(TOKEN_ENV)
    if configured:
        check_token(configured)
        return BearerToken(configured, TOKEN_ENV)
    path = token_file(private_dir(state_dir))
    replaced = None
    if not renew:
        try:
            kept = _kept(path)
        except UnsafePath as exc:
            kept, replaced = None, exc.message
        if kept is not None:
            return BearerToken(kept, str(path))
    value = secrets.token_urlsafe(TOKEN_BYTES)
    data = (value + "\n").encode("ascii")
    try:
        if renew or replaced is not None:
            write_private(path, data)  # renames over whatever is there, a link included
        elif not create_private(path, data):
            return bearer_token(state_dir, environ)  # another process made one first
    except OSError as exc:
        raise UnsafePath(f"cannot write {path}: {exc.strerror or exc}") from None
    return BearerToken(value, str(path), created=True, replaced=replaced)


def _kept(path: Path) -> str | None:
    """The token in `path`, None when there is none; UnsafePath when it cannot be trusted."""
    data = read_secret(path)
    if data is None:
        return None
    value = data.decode("ascii", "replace").strip()
    if len(value) < MIN_TOKEN_CHARS or not value.isascii() or not value.isprintable():
        raise UnsafePath(f"refusing to use {path}: it holds no well-formed token")
    return value


def check_token(token: str) -> None:
    """A token a client can send in a header and nobody can guess."""
    if len(token) < MIN_TOKEN_CHARS:
        raise UserError(
            f"{TOKEN_ENV} is too short ({len(token)} characters)",
            f"use at least {MIN_TOKEN_CHARS}, e.g. `openssl rand -hex 32`",
        )
    if not (token.isascii() and token.isprintable()) or " " in token:
        raise UserError(
            f"{TOKEN_ENV} holds a space or a character a header cannot carry",
            "use letters and digits, e.g. `openssl rand -hex 32`",
        )
