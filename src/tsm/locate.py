"""Where an index lives, and whether the user trusts it, from the environment and the working
directory alone. Only `os`, so the thin client (cli/entry.py) can find the daemon's socket
without loading the config.

The plugin's hooks may not import tsm, so plugin/hooks/_locate.py is a byte-for-byte copy
of this file, for Python 3.9 too (tests/test_locate_agreement.py checks both, and runs one
table of cases through tsm's settings and the hooks' workspace).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

CONFIG_FILE = "tsm.toml"
STATE_DIR_NAME = ".tsm"
SOCKET_NAME = "tsmd.sock"
# One absolute index root per line, written by `tsm init` / `tsm trust` (trust.py); a plain
# file beside config.toml so the hooks read it without a TOML parser and tsm never rewrites
# the user's own config.toml.
TRUST_FILE = "trusted-roots.txt"


def expand_home(path: str, environ: Mapping[str, str]) -> str:
    """`~` and `~/x` from the given environment's HOME (the daemon answers for clients)."""
    if path == "~" or path.startswith("~/"):
        home = environ.get("HOME") or os.path.expanduser("~")
        return home + path[1:]
    return os.path.expanduser(path)  # ~user, or nothing to expand


def index_root(cwd: str, environ: Mapping[str, str]) -> str:
    """TSM_INDEX_ROOT (a relative one from `cwd`), else the nearest directory at or above `cwd`
    holding tsm.toml or a .tsm state dir, else `cwd`; symlinks resolved."""
    here = os.path.realpath(cwd)
    explicit = environ.get("TSM_INDEX_ROOT")
    if explicit:
        return os.path.realpath(os.path.join(here, expand_home(explicit, environ)))
    folder = here
    while True:
        if os.path.isfile(os.path.join(folder, CONFIG_FILE)) or os.path.isdir(
            os.path.join(folder, STATE_DIR_NAME)
        ):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return here
        folder = parent


def state_dir(root: str, environ: Mapping[str, str]) -> str:
    """TSM_STATE_DIR (a relative one from the index root), else <index root>/.tsm."""
    chosen = environ.get("TSM_STATE_DIR")
    if not chosen:
        return os.path.join(root, STATE_DIR_NAME)
    return os.path.normpath(os.path.join(root, expand_home(chosen, environ)))


def db_path(root: str, state: str, environ: Mapping[str, str]) -> str:
    """TSM_DB_PATH (a relative one from the index root), else <state dir>/tsm.db."""
    chosen = environ.get("TSM_DB_PATH")
    if not chosen:
        return os.path.join(state, "tsm.db")
    return os.path.normpath(os.path.join(root, expand_home(chosen, environ)))


def user_config_dir(environ: Mapping[str, str]) -> str:
    """$XDG_CONFIG_HOME/tsm (only an absolute one counts, as the XDG spec says), else
    ~/.config/tsm."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(expand_home("~", environ), ".config")
    return os.path.join(base, "tsm")


def trusted_roots(environ: Mapping[str, str]) -> set[str]:
    """The roots listed in the user's trust file; none when it is missing or unreadable."""
    try:
        with open(os.path.join(user_config_dir(environ), TRUST_FILE), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    return {
        line
        for line in (raw.strip() for raw in lines)
        if line and not line.startswith("#") and os.path.isabs(line)
    }


def is_trusted(root: str, environ: Mapping[str, str]) -> bool:
    """Whether the user vouched for this index root: it is in the trust file, or the user's
    own environment names it with an absolute (or `~`) TSM_INDEX_ROOT. A relative
    TSM_INDEX_ROOT (say `.`) names whatever folder one happens to be in, so it does not."""
    explicit = environ.get("TSM_INDEX_ROOT", "")
    if (
        explicit
        and os.path.isabs(expand_home(explicit, environ))
        and os.path.realpath(expand_home(explicit, environ)) == root
    ):
        return True
    return root in trusted_roots(environ)
