"""The console-script entry point (`tsm`, `kb`, `python -m tsm`).

`tsm search` and `tsm context` are what agents and the prompt hook run on every prompt, so
when a daemon is running the command line is forwarded whole (arguments, TSM_* environment,
working directory, whether stdout is a terminal, and the hook input `tsm context` reads from
stdin) and the daemon parses, searches and renders it with the same code as
cli/main.py. This module then imports only `os`, `sys`, `socket` and `json`: no argparse,
no config loader, no dataclasses (bench/daemon_latency.py measures it).

Anything else, and any trouble on the way (no socket, a daemon with other settings, a
protocol error), runs the full CLI, which may still use the daemon or search in-process.
"""

from __future__ import annotations

import os
import sys

# What the daemon needs from the client's environment to answer exactly as the full CLI
# would: every TSM_* variable (settings, TSM_NOW …), where the user config lives, and what
# the client's terminal can show (colour, width: render/terminal.py).
_FORWARDED_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR_FORCE",
    "TERM",
    "COLUMNS",
)
_NOT_FORWARDED = {"-h", "--help", "--version"}
CONNECT_TIMEOUT = 2.0
_MAX_INPUT_BYTES = 8 * 1024 * 1024
REPLY_TIMEOUT = 60.0  # a daemon that just started may still be loading the model


def main() -> int:
    argv = sys.argv[1:]
    if argv == ["--version"]:  # what the plugin's SessionStart hook asks: no parser needed
        from .. import __version__

        print(f"tsm {__version__}")
        return 0
    code = forward(argv)
    if code is not None:
        return code
    from .main import main as full_cli

    return full_cli(argv)


def forward(argv: list[str]) -> int | None:
    """Exit code of the search (or prompt context) the daemon ran for us, or None to run the
    full CLI."""
    if (
        not argv
        or argv[0] not in ("search", "context")
        or _NOT_FORWARDED.intersection(argv)
        or any(a == "--open" or a.startswith("--open=") for a in argv)  # needs this terminal
        or os.environ.get("TSM_DEBUG") == "1"
    ):
        return None
    from .. import locate
    from ..socketpath import socket_path

    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed: let the full CLI say so
        return None
    root = locate.index_root(cwd, os.environ)
    sock_path = socket_path(locate.state_dir(root, os.environ), os.environ)
    if not os.path.exists(sock_path):
        return None  # not running: the full CLI decides whether to start it
    stdin = _hook_input(argv)
    if stdin is False:
        return None
    tty = sys.stdout.isatty()
    env = {k: v for k, v in os.environ.items() if k.startswith("TSM_") or k in _FORWARDED_ENV}
    if tty and "COLUMNS" not in env:  # shells rarely export it: the daemon cannot ask
        try:
            env["COLUMNS"] = str(os.get_terminal_size(sys.stdout.fileno()).columns)
        except (OSError, ValueError):
            pass
    request: dict[str, object] = {"argv": argv, "cwd": cwd, "tty": tty, "env": env}
    if stdin is not None:
        request["stdin"] = stdin
    reply = _ask(sock_path, request)
    if reply is None:
        return None
    out, err, code = reply
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    return code


def _hook_input(argv: list[str]) -> str | None | bool:
    """For `tsm context` without --prompt, the hook input read from stdin (which is then
    handed on as stdin, in case the full CLI answers after all); False when it cannot travel
    (not UTF-8: the full CLI names the error); None for any other command line."""
    if argv[0] != "context" or any(a == "--prompt" or a.startswith("--prompt=") for a in argv):
        return None
    if sys.stdin is None or sys.stdin.isatty():
        return False  # the full CLI asks for the input
    import io

    raw = sys.stdin.buffer.read(_MAX_INPUT_BYTES + 1)  # commandline/context.py refuses more
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return False


def _ask(sock_path: str, args: dict[str, object]) -> tuple[str, str, int] | None:
    """The daemon's (stdout, stderr, exit code) for this command line, or None."""
    import socket

    from ..client import protocol
    from ..client.peer import foreign_uid

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(sock_path)
            if foreign_uid(sock) is not None:
                return None  # another user's process: the full CLI says so and works alone
            protocol.send(sock, protocol.request("cli", args), timeout=CONNECT_TIMEOUT)
            reply = protocol.receive(sock, protocol.MAX_REPLY_BYTES, REPLY_TIMEOUT)
    except (OSError, protocol.ProtocolError, protocol.ConnectionClosed):
        return None  # TimeoutError is an OSError
    except UnicodeError:
        return None  # an argument or variable that is not UTF-8: the full CLI names it
    result = reply.get("result")
    if not reply.get("ok") or not isinstance(result, dict):
        return None
    out, err, code = result.get("stdout"), result.get("stderr"), result.get("exit")
    if not (isinstance(out, str) and isinstance(err, str) and isinstance(code, int)):
        return None
    return out, err, code
