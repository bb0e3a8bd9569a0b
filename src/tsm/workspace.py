"""Where things live inside an index root: state-dir paths and `.tsmignore` matching."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .config import Settings
from .errors import UserError

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
        return self.root / "tsmd.sock"

    @property
    def pid(self) -> Path:
        return self.root / "tsmd.pid"

    @property
    def user_dict(self) -> Path:
        return self.root / "user_dict.csv"

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


def relative_to_root(settings: Settings, path: Path) -> str:
    """The POSIX path of `path` relative to the index root; UserError if it lies outside."""
    resolved = path.expanduser().resolve() if path.is_absolute() else (Path.cwd() / path).resolve()
    try:
        return PurePosixPath(resolved.relative_to(settings.index_root)).as_posix()
    except ValueError:
        raise UserError(
            f"{path} is outside the index root {settings.index_root}",
            "run tsm from inside the notes folder or set TSM_INDEX_ROOT",
        ) from None
