"""`tsm search … --open [N]`: open result N in the user's editor ($VISUAL, else $EDITOR), at
the line the hit starts on when the editor takes a line (render/human_format.hit_line)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from ..errors import UserError
from ..models import SearchResult
from ..statedir import note_file

# How editors take "open at line": `+LINE FILE`, `--goto FILE:LINE`, or `FILE:LINE`.
PLUS_LINE = frozenset(
    {"vi", "vim", "nvim", "gvim", "view", "nano", "emacs", "emacsclient", "micro", "kak", "mg"}
    | {"joe", "jed", "ne", "pico", "ed", "ex", "elvis", "nvi", "vis"}
)
GOTO = frozenset({"code", "code-insiders", "codium", "cursor", "windsurf"})
COLON_LINE = frozenset({"subl", "sublime_text", "zed", "hx", "helix"})


def editor_command(editor: str, path: Path, line: int | None) -> list[str]:
    """The argv that opens `path` at `line` with `editor` (a command line, as $EDITOR may
    be `code --wait` or `emacsclient -t`)."""
    words = shlex.split(editor)
    if not words:
        raise UserError("$EDITOR is empty", "set EDITOR (or VISUAL) to your editor, e.g. vim")
    name = os.path.basename(words[0])
    if line is None:
        return [*words, str(path)]
    if name in PLUS_LINE:
        return [*words, f"+{line}", str(path)]
    if name in GOTO:
        return [*words, "--goto", f"{path}:{line}"]
    if name in COLON_LINE:
        return [*words, f"{path}:{line}"]
    return [*words, str(path)]


def open_result(result: SearchResult, number: int, root: Path) -> int:
    if not result.results:
        raise UserError("nothing to open: the search found no result", "try other words")
    if number > len(result.results):
        raise UserError(
            f"there is no result {number}: the search returned {len(result.results)}",
            "pick a number from the list above",
        )
    hit = result.results[number - 1]
    file = note_file(root, hit.source.path)
    path = Path(file) if file is not None else None
    if hit.source.type == "session" or path is None or not path.is_file():
        raise UserError(f"result {number} is not a file on disk: {hit.source.path}")
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise UserError(
            "no editor to open the result with", "set EDITOR (or VISUAL), e.g. export EDITOR=vim"
        )
    from ..render.human_format import hit_line

    command = editor_command(editor, path, hit_line(str(root), hit))
    try:
        subprocess.run(command, check=False)
    except OSError as exc:
        raise UserError(f"cannot run the editor {command[0]!r}: {exc.strerror}") from None
    return 0
