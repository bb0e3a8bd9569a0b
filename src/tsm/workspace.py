"""Where things live inside an index root: state-dir paths and `.tsmignore` matching."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .socketpath import socket_path

IGNORE_FILE = ".tsmignore"
# Never indexed, whatever .tsmignore says: tool state and VCS internals.
ALWAYS_IGNORED = (
    ".tsm/",
    ".git/",
    ".hg/",
    ".svn/",
    ".obsidian/",
    ".trash/",
    "node_modules/",
    "__pycache__/",
    ".venv/",
    ".DS_Store",
)


@dataclass(frozen=True)
class StatePaths:
    """Files inside the state dir."""

    root: Path

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def socket(self) -> Path:
        """<state dir>/tsmd.sock, or the runtime folder's when that path is too long."""
        return Path(socket_path(str(self.root), os.environ))

    @property
    def pid(self) -> Path:
        return self.root / "tsmd.pid"

    @property
    def synonyms(self) -> Path:
        return self.root / "synonyms.csv"


# A .tsmignore comes with the folder, maybe from someone else. pathspec turns each `*` into
# `[^/]*`, and k of them in one segment backtrack like n^k on a hostile name (`*a*a*a*a`
# took 5 s for one 255-character name): at most two per segment, and a bounded file.
MAX_STARS_PER_SEGMENT = 2
MAX_IGNORE_LINES = 1000
MAX_IGNORE_BYTES = 64 * 1024


class IgnoreRules:
    """gitignore-style matching (via pathspec) of paths relative to the index root.

    `warnings` names the .tsmignore lines that were not used (too costly to match)."""

    def __init__(self, root: Path, extra_lines: tuple[str, ...] = ()) -> None:
        import pathspec

        self.warnings: list[str] = []
        lines = list(ALWAYS_IGNORED) + list(extra_lines)
        lines += self._read_ignore_file(root / IGNORE_FILE)
        self._spec = pathspec.PathSpec.from_lines("gitignore", lines)

    def _read_ignore_file(self, path: Path) -> list[str]:
        try:
            with open(path, "rb", opener=_nonblocking) as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    return []
                data = fh.read(MAX_IGNORE_BYTES + 1)
        except OSError:
            return []
        if len(data) > MAX_IGNORE_BYTES:
            self.warnings.append(
                f"{IGNORE_FILE}: only its first {MAX_IGNORE_BYTES // 1024} KB are used"
            )
        lines = data[:MAX_IGNORE_BYTES].decode("utf-8", "replace").splitlines()
        if len(lines) > MAX_IGNORE_LINES:
            self.warnings.append(f"{IGNORE_FILE}: only its first {MAX_IGNORE_LINES} lines are used")
        kept = []
        for number, line in enumerate(lines[:MAX_IGNORE_LINES], start=1):
            segments = line.strip().split("/")
            if any(seg != "**" and seg.count("*") > MAX_STARS_PER_SEGMENT for seg in segments):
                self.warnings.append(
                    f"{IGNORE_FILE}:{number}: not used: more than {MAX_STARS_PER_SEGMENT} '*' "
                    "in one path segment (matching it could take minutes)"
                )
                continue
            kept.append(line)
        return kept

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        return self._spec.match_file(rel + "/" if is_dir else rel)

    def ignored_within(self, rel: str, is_dir: bool = False) -> bool:
        """Ignored itself or inside an ignored folder (a file watcher sees a path alone, not
        the walk down to it that would have skipped the folder)."""
        parts = PurePosixPath(rel).parts
        if any(self.ignored("/".join(parts[:i]), is_dir=True) for i in range(1, len(parts))):
            return True
        return self.ignored(rel, is_dir=is_dir)


def _nonblocking(path: str, flags: int) -> int:
    """Open without blocking on a FIFO planted under the name (then refused as not regular)."""
    return os.open(path, flags | os.O_NONBLOCK)


def typed_path(text: str, cwd: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """A path the user typed, as a path relative to the index root (POSIX, "" for the root
    itself). It is read from the working directory, as every other tool reads a path; when
    that does not lead into the root (the user is outside it), from the root. An absolute
    path is taken as is. ValueError when it leads outside the root either way."""
    real_root = os.path.realpath(root)
    if os.path.isabs(text):
        bases: tuple[str, ...] = ("",)
        text = os.path.realpath(text)  # the root was resolved: so is what names it
    else:
        bases = (os.path.realpath(cwd), real_root)
    for base in bases:
        relative = os.path.relpath(os.path.normpath(os.path.join(base, text)), real_root)
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            return "" if relative == os.curdir else Path(relative).as_posix()
    raise ValueError(f"{text!r} is outside the index root {real_root}")
