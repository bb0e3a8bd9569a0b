"""How to run this very tsm, recorded for the Claude Code plugin's hooks (plugin/README.md,
"How the hooks find tsm").

`./scripts/demo` and `pip install` into a virtualenv leave `tsm` in `.venv/bin`, which is
not on the PATH Claude Code gives its hooks. `tsm init`, `tsm trust` and `tsm index` write
the command that runs them into `<user config dir>/tsm-command.json`, so the hooks of a
trusted root find the tsm that set it up. Plain JSON beside trusted-roots.txt: the hooks
read it with the standard library. Only `os`, `sys` and `json`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping

from . import locate

COMMAND_FILE = "tsm-command.json"
_NAMES = ("tsm", "kb")


def command_file(environ: Mapping[str, str]) -> str:
    return os.path.join(locate.user_config_dir(environ), COMMAND_FILE)


def python(*args: str) -> list[str]:
    """This interpreter running ARGS (`-m MODULE …`, `-c CODE …`) as every child process
    tsm starts runs it: with `-P`, so that the working directory is not put first on
    sys.path. `python -m` and `-c` otherwise import from it before anything installed, and
    tsm runs in the repositories it indexes: one holding a `tsm/` package (or `sudachipy/`,
    or a `json.py`) at its root had its code run by the daemon a search starts, by the
    PDF reader, the embedding worker and the user dictionary's build."""
    return [sys.executable, "-P", *args]


def this_command(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """The command that runs this tsm: its console script when there is one (the `tsm` being
    run, or the one beside this interpreter), else `python -m tsm` with this interpreter.

    Paths are made absolute but symlinks are kept: a virtualenv's `python` is a symlink whose
    location, not its target, selects the virtualenv.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    candidates = []
    if os.path.basename(argv0) in _NAMES:
        candidates.append(os.path.abspath(argv0))
    if executable:
        candidates.append(os.path.join(os.path.dirname(os.path.abspath(executable)), "tsm"))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [candidate]
    return [os.path.abspath(executable), "-P", "-m", "tsm"]  # -P: see python()


def remember(environ: Mapping[str, str], command: list[str] | None = None) -> str | None:
    """Write the command into the user config dir when it changed; the file's path, or None
    when it could not be written (a read-only home must not fail `tsm init`)."""
    command = this_command() if command is None else command
    path = command_file(environ)
    text = json.dumps({"command": command}, ensure_ascii=False) + "\n"
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return path
    except (OSError, UnicodeDecodeError):
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        partial = f"{path}.{os.getpid()}.tmp"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(partial, path)  # replaces a symlink planted at the name, never follows it
    except OSError:
        return None
    return path
