"""PostToolUse hook (Edit|Write|MultiEdit): re-index the edited file when it lies under the
index root and tsm can read it, so what Claude just wrote is searchable in the next prompt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402 - the path above makes the hook runnable as a bare script
    HookInput,
    Workspace,
    input_cwd,
    input_string,
    run_hook,
    run_tsm,
)

HOOK_NAME = "post_tool_use"
# tsm.sources.READERS, which the hook cannot import (tests/test_locate_agreement.py).
INDEXABLE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".pdf"})
# The hook runs async (hooks/hooks.json), so this bounds a stuck tsm, not the user's wait.
INDEX_TIMEOUT_SECONDS = 60.0


def path_in_root(file_path: Path, root: Path) -> Path | None:
    """`file_path` relative to `root`, or None when it lies outside.

    Compared both as written and with symlinks resolved, since the editor's path and the
    session's cwd may disagree on a symlinked prefix (e.g. /tmp → /private/tmp on macOS).
    """
    for path, base in ((file_path, root), (file_path.resolve(), root.resolve())):
        if path.is_relative_to(base):
            return path.relative_to(base)
    return None


def index_command(relative: Path) -> list[str]:
    """The `tsm index` arguments for one file, given relative to the index root (the cwd).
    The path comes after `--`: a note named `-h.md` or `--apply.md` is a file, not an option."""
    return ["index", "-f", "json", "--", str(relative)]


def handle(data: HookInput, workspace: Workspace) -> None:
    """Re-index the edited file; files outside the root or of other types are not ours."""
    if not workspace.configured:
        return None
    cwd = input_cwd(data)
    file_path = Path(os.path.normpath(cwd / input_string(data, "tool_input", "file_path")))
    if file_path.suffix.lower() not in INDEXABLE_SUFFIXES or not file_path.is_file():
        return None
    relative = path_in_root(file_path, workspace.root)
    if relative is None:
        return None
    run_tsm(
        index_command(relative),
        workspace=workspace,
        session_cwd=input_cwd(data),
        timeout=INDEX_TIMEOUT_SECONDS,
        environ=os.environ,
    )
    return None


if __name__ == "__main__":
    run_hook(HOOK_NAME, handle)
