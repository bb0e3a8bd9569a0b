"""Checks of the daemon's request arguments. Any local process of the user may talk to the
socket, so a wrongly typed argument (a string for a number, a huge integer, an object for
a path) is the client's error (exit 1, `user_error`), never a crash of the op."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..errors import UserError

# build_query's keyword arguments, each with the JSON types it accepts.
SEARCH_FLAGS: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "top_k": (int,),
    "mode": (str,),
    "fallback": (str,),
    "after": (str, type(None)),
    "before": (str, type(None)),
    "recent": (str, type(None)),
    "year": (str, type(None)),
    "paths": (list,),
    "tags": (list,),
    "types": (list,),
    "include_content": (int,),
}


def search_flags(args: dict[str, Any]) -> dict[str, Any]:
    """The `flags` object of a search request, checked field by field."""
    flags = args.get("flags")
    if not isinstance(flags, dict):
        raise UserError("search flags must be an object")
    for name, value in flags.items():
        allowed = SEARCH_FLAGS.get(name)
        if allowed is None:
            raise UserError(
                f"unknown search flag {name!r}", "known: " + ", ".join(sorted(SEARCH_FLAGS))
            )
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise UserError(f"search flag {name!r} has the wrong type ({type(value).__name__})")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise UserError(f"search flag {name!r} must be a list of strings")
    return flags


def moment(args: dict[str, Any], name: str) -> dt.datetime:
    """An optional ISO date/time argument; now when absent."""
    value = args.get(name)
    if value is None:
        return dt.datetime.now()
    if not isinstance(value, str):
        raise UserError(f"{name!r} must be an ISO date string, got {type(value).__name__}")
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"{name!r} is not an ISO date: {value[:40]!r}") from None


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
