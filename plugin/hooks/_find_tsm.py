"""Which program the hooks run as tsm (plugin/README.md "How the hooks find tsm"), and the
rule every way of finding it obeys: an absolute program that no repository controls.

A hook runs on every prompt in whatever folder the session is in, often a cloned
repository. A PATH entry that is relative (`.`, an empty entry, `node_modules/.bin`) or
that lies in the session's folder or an index root names a folder a repository can fill,
so a `tsm` found there is never run; nor is a relative TSM_BIN, plugin option or recorded
command, which would be looked up on that PATH or in the folder tsm runs in.

Stdlib only, and runnable by Python 3.9 too (see _common.py).
"""

from __future__ import annotations

import json
import os
import sys

import _locate  # the hooks run as scripts with their own folder on sys.path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


class NotFound(Exception):
    """No tsm the hooks may run; the message says what was tried."""


# The plugin's own setting (plugin.json "userConfig"), which Claude Code passes to the hooks
# as CLAUDE_PLUGIN_OPTION_<KEY>; set with `/plugin configure tsm`.
PLUGIN_OPTION = "CLAUDE_PLUGIN_OPTION_TSM_BIN"
# What `tsm init`, `tsm trust` and `tsm index` record in the user config dir (tsm's
# launcher.py): the command that ran them, e.g. a virtualenv's bin/tsm outside PATH.
COMMAND_FILE = "tsm-command.json"
# The plugin's folder (hooks/, .claude-plugin/). `claude plugin install` copies it into
# <plugins>/cache/<marketplace>/<plugin>/<version> and records in <plugins>/MARKETPLACES_FILE
# where each marketplace came from; `claude --plugin-dir` and the tests run it in place.
PLUGIN_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKETPLACES_FILE = "known_marketplaces.json"
VENV_TSM = os.path.join(".venv", "bin", "tsm")  # what `./scripts/demo` makes in a checkout


def tsm_command(environ: Mapping[str, str], workspace: Iterable[str]) -> list[str]:
    """The command that runs tsm, the first found of: TSM_BIN; the plugin's `tsm_bin`
    option; `tsm` on PATH, in an absolute entry outside every folder of `workspace` (the
    session's folder and the index roots, as real paths); the command recorded by the last
    `tsm init`, `tsm trust` or `tsm index`; the `.venv/bin/tsm` of the checkout the plugin
    was installed from (`./scripts/demo` makes it); `python3 -P -m tsm` when this
    interpreter has tsm installed. NotFound saying what was tried when none is there.

    TSM_BIN and the plugin option are the user's explicit choice: when set they are used as
    they are (a wrong one fails visibly rather than another tsm running in its place), but
    only when absolute."""
    for name in ("TSM_BIN", PLUGIN_OPTION):
        chosen = environ.get(name, "").strip()
        if chosen:
            program = _locate.expand_home(chosen, environ)
            if not os.path.isabs(program):
                raise NotFound(
                    f"{name} is {chosen!r}, not an absolute path: the hooks run only an absolute"
                    " program, since a relative one is looked up in the folder of the session"
                )
            return [program]
    found = _on_path(environ.get("PATH", os.defpath), [os.path.realpath(w) for w in workspace])
    if isinstance(found, str):
        return [found]
    tried = found or ["it is not on PATH"]
    recorded, why = _recorded_command(environ)
    if recorded is not None:
        return recorded
    tried.append(why or "no `tsm init` or `tsm trust` recorded where it is")
    for checkout in checkout_tsm_candidates():
        if _executable(checkout):
            return [checkout]
    import importlib.util

    # -P (Python 3.11+, as tsm needs): tsm runs in the index root, and `python -m` would
    # import a `tsm/` package a repository holds there before the installed one.
    if sys.version_info >= (3, 11) and importlib.util.find_spec("tsm") is not None:
        return [sys.executable, "-P", "-m", "tsm"]
    raise NotFound(
        "cannot find tsm: "
        + ", ".join(tried)
        + ", and python3 has no tsm module. Set the plugin's tsm_bin option (`claude plugin"
        " install tsm@the-space-memory --config tsm_bin=/path/to/.venv/bin/tsm`, or"
        " /plugin configure) or TSM_BIN"
    )


def _on_path(path: str, workspace: list[str]) -> str | list[str]:
    """The first `tsm` in an absolute PATH entry that lies outside `workspace`, or what was
    passed over on the way (one phrase each, for the message when nothing is found)."""
    skipped: list[str] = []
    for entry in path.split(os.pathsep):
        candidate = os.path.join(entry, "tsm")
        if not _executable(candidate):
            continue
        if not os.path.isabs(entry):
            skipped.append(f"the tsm in PATH entry {entry or '(empty)'!r} is relative, not run")
            continue
        real = os.path.realpath(entry)
        inside = next((w for w in workspace if real == w or real.startswith(w + os.sep)), None)
        if inside is not None:
            skipped.append(f"{candidate} lies in {inside}, which a repository may fill, not run")
            continue
        return candidate
    return skipped


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def checkout_tsm_candidates() -> list[str]:
    """The `.venv/bin/tsm` of the checkout the plugin came from: beside the plugin folder
    when it runs in place, else in the folder of the directory marketplace it was installed
    from (`claude plugin marketplace add /path/to/checkout`), which Claude Code records."""
    candidates = [os.path.join(os.path.dirname(PLUGIN_ROOT), VENV_TSM)]
    marketplace_dir = os.path.dirname(os.path.dirname(PLUGIN_ROOT))
    cache = os.path.dirname(marketplace_dir)
    if os.path.basename(cache) == "cache":
        known = os.path.join(os.path.dirname(cache), MARKETPLACES_FILE)
        folder = _directory_marketplace(known, os.path.basename(marketplace_dir))
        if folder is not None:
            candidates.append(os.path.join(folder, VENV_TSM))
    return candidates


def _directory_marketplace(known: str, name: str) -> str | None:
    """The folder a directory marketplace `name` was added from, per Claude Code's record."""
    try:
        with open(known, encoding="utf-8") as fh:
            entry = json.load(fh).get(name)
        source = entry.get("source") if isinstance(entry, dict) else None
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(source, dict) and source.get("source") == "directory":
        path = source.get("path")
        if isinstance(path, str) and os.path.isabs(path):
            return path
    return None


def _recorded_command(environ: Mapping[str, str]) -> tuple[list[str] | None, str]:
    """The recorded command if its program is absolute and still exists, else None and why
    not. tsm records an absolute one; a relative one (a hand-edited file) would be looked
    up on PATH or in the folder tsm runs in."""
    path = os.path.join(_locate.user_config_dir(environ), COMMAND_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            command = json.load(fh).get("command")
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError, AttributeError) as exc:
        return None, f"{path} is unreadable ({type(exc).__name__})"
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(part, str) and part for part in command)
    ):
        return None, f"{path} holds no command"
    if not os.path.isabs(command[0]):
        return None, f"the tsm recorded in {path} is not an absolute path ({command[0]})"
    if not _executable(command[0]):
        return None, f"the tsm recorded in {path} is gone ({command[0]})"
    return command, ""
