"""Checks of the daemon's request arguments. Any local process of the user may talk to the
socket, so a wrongly typed argument (a string for a number, a huge integer, an object for
a path) is the client's error (exit 1, `user_error`), never a crash of the op."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class CommandLine:
    """A command line the thin client forwarded: its words, environment, folder, whether
    its stdout is a terminal, and what it read on stdin (for `tsm context`)."""

    argv: list[str]
    environ: dict[str, str]
    cwd: str
    tty: bool
    stdin: bytes | None


def command_line(args: dict[str, Any]) -> CommandLine:
    argv, env, cwd = args.get("argv"), args.get("env"), args.get("cwd")
    if not (
        isinstance(argv, list)
        and all(isinstance(a, str) for a in argv)
        and isinstance(env, dict)
        and isinstance(cwd, str)
    ):
        raise UserError("cli args must hold argv (strings), env (object) and cwd")
    stdin = args.get("stdin")
    return CommandLine(
        argv,
        {str(k): str(v) for k, v in env.items()},
        cwd,
        bool(args.get("tty")),
        stdin.encode("utf-8") if isinstance(stdin, str) else None,
    )
