"""Checks of the daemon's request arguments. Any local process of the user may talk to the
socket, so a wrongly typed argument (a string for a number, a huge integer, an object for
a path) is the client's error (exit 1, `user_error`), never a crash of the op."""

from __future__ import annotations

from typing import Any

from ..errors import UserError


def text(args: dict[str, Any], name: str) -> str:
    """A required string argument (a path, a target)."""
    value = args.get(name)
    if not isinstance(value, str) or not value:
        raise UserError(f"{name!r} must be a non-empty string")
    if "\x00" in value:
        raise UserError(f"{name!r} must not contain NUL")
    return value


def texts(args: dict[str, Any], name: str) -> list[str]:
    """An optional list of strings (absent: empty)."""
    value = args.get(name, [])
    if not isinstance(value, list) or not all(
        isinstance(v, str) and "\x00" not in v for v in value
    ):
        raise UserError(f"{name!r} must be a list of strings")
    return value


def flag(args: dict[str, Any], name: str) -> bool:
    """An optional boolean (absent: false)."""
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise UserError(f"{name!r} must be true or false")
    return value
