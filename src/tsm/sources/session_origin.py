"""Which transcripts `tsm ingest-session` may read: the user's own, in the folder Claude Code
keeps for this index root (or a folder inside it), or in a configured sessions folder.

The Stop hook hands tsm whatever `transcript_path` it was given, and anyone may name a file
on the command line; read without this check, another project's conversation, or another
account's file, would become searchable in this index.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from ..config import Settings
from ..errors import UserError
from .files import display

# Claude Code names a project's folder under <config dir>/projects after the session's
# working directory (its real path), every character but an ASCII letter or digit written
# as "-"; a name longer than 200 is cut there and followed by a hash of the path (Claude
# Code 2.1.197's cli: `$E`, `jCe`).
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
MAX_NAME = 200
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def project_folder_name(directory: str) -> str:
    """The name Claude Code gives the transcripts folder of a session run in `directory`."""
    # JavaScript replaces UTF-16 code units: a character beyond U+FFFF becomes two dashes
    name = _NOT_ALNUM.sub(lambda m: "--" if ord(m.group()) > 0xFFFF else "-", directory)
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME]}-{_base36(abs(_string_hash(directory)))}"


def _string_hash(text: str) -> int:
    """JavaScript's `h = (h << 5) - h + charCodeAt(i) | 0` over the UTF-16 code units."""
    units = text.encode("utf-16-le", "surrogatepass")
    value = 0
    for i in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _BASE36[digit] + digits
        if not number:
            return digits


def claude_projects_dir(environ: Mapping[str, str]) -> Path:
    """<CLAUDE_CONFIG_DIR>/projects when that is absolute, else ~/.claude/projects."""
    chosen = environ.get("CLAUDE_CONFIG_DIR", "")
    base = Path(chosen) if os.path.isabs(chosen) else Path.home() / ".claude"
    return base / "projects"


def ingest_folder(settings: Settings, path: Path, environ: Mapping[str, str]) -> Path:
    """The folder (a real path) that `path` is read from: a sessions folder, or Claude
    Code's folder for the index root or a folder inside it. UserError for a file that is a
    link, not a regular file, not the user's, or in no such folder."""
    shown = display(os.path.abspath(path))
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise _refused(shown, "is a symbolic link; ingest-session reads no file through a link")
    if not stat.S_ISREG(info.st_mode):
        raise _refused(shown, "is not a regular file")
    if info.st_uid != os.getuid():
        raise _refused(shown, "belongs to another user")
    real = Path(os.path.realpath(path))
    for folder in settings.session_dirs:
        inside = Path(os.path.realpath(folder))
        if real.is_relative_to(inside):
            return inside
    projects = Path(os.path.realpath(claude_projects_dir(environ)))
    if real.is_relative_to(projects) and len(real.relative_to(projects).parts) > 1:
        name = real.relative_to(projects).parts[0]
        if names_root_or_inside(name, settings.index_root):
            return projects / name
    raise _refused(
        shown,
        f"is not a transcript of this index root: ingest-session reads the user's own "
        f"transcripts in {claude_projects_dir(environ)}/"
        f"{project_folder_name(str(settings.index_root))}[-…] (sessions run in "
        f"{settings.index_root} or a folder inside it) or in a folder of sessions.dirs",
        hint="add its folder to sessions.dirs in tsm.toml to ingest transcripts from there",
    )


def names_root_or_inside(name: str, root: Path) -> bool:
    """Whether `name` is Claude Code's folder name for `root` or for a folder below it.

    The name is lossy (`a-b`, `a/b` and `a.b` all give `a-b`), so a name that continues
    `root`'s is matched against the folders that exist below it: a sibling such as
    `root-old` is not taken for a folder inside `root`."""
    own = project_folder_name(str(root))
    if name == own:
        return True
    if len(name) > MAX_NAME:  # cut and hashed: no folder below can be matched by its name
        return False
    return name.startswith(own + "-") and _names_below(root, name[len(own) + 1 :])


def _names_below(folder: Path, rest: str) -> bool:
    """Whether a folder below `folder` is named `rest` (its path below `folder`, encoded)."""
    try:
        children = [e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return False
    for child in children:
        code = project_folder_name(child)
        if rest == code:
            return True
        if rest.startswith(code + "-") and _names_below(folder / child, rest[len(code) + 1 :]):
            return True
    return False


def _refused(shown: str, why: str, hint: str | None = None) -> UserError:
    return UserError(f"{shown} {why}", hint=hint)
