"""Where things live inside an index root: state-dir paths and `.tsmignore` matching."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .locate import SOCKET_NAME

IGNORE_FILE = ".tsmignore"
# Never indexed, whatever .tsmignore says: tool state and VCS internals.
ALWAYS_IGNORED = (".tsm/", ".git/", ".hg/", ".svn/", ".obsidian/", ".trash/", "node_modules/",
                  "__pycache__/", ".venv/", ".DS_Store")


@dataclass(frozen=True)
class StatePaths:
    """Files inside the state dir."""

    root: Path

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def socket(self) -> Path:
        return self.root / SOCKET_NAME

    @property
    def pid(self) -> Path:
        return self.root / "tsmd.pid"

    @property
    def synonyms(self) -> Path:
        return self.root / "synonyms.csv"


class IgnoreRules:
    """gitignore-style matching (via pathspec) of paths relative to the index root."""

    def __init__(self, root: Path, extra_lines: tuple[str, ...] = ()) -> None:
        import pathspec

        lines = list(ALWAYS_IGNORED) + list(extra_lines)
        ignore_file = root / IGNORE_FILE
        if ignore_file.is_file():
            try:
                lines += ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                pass
        self._spec = pathspec.PathSpec.from_lines("gitignore", lines)

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        return self._spec.match_file(rel + "/" if is_dir else rel)
