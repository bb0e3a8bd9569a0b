"""A repository never gets its Python run by tsm. tsm runs in the repositories it indexes,
and `python -m MODULE` and `python -c CODE` put the working directory first on sys.path: a
clone holding a `tsm/` package (or `sudachipy/`, or a `json.py`) at its root had it imported
in place of the installed one by each child process tsm starts (the daemon a search
autostarts, the PDF reader, the embedding workers, the user dictionary's build)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "vault"
USER_DICT_ROW = (
    "ふーばー,4,4,5000,ふーばー,名詞,固有名詞,一般,*,*,*,フーバー,ふーばー,*,A,*,*,*,*\n"
)


def plant(root: Path, marker: Path) -> None:
    """Modules that append their name to `marker` when imported."""
    for module in ("tsm/__init__", "tsm/sources/__init__", "tsm/sources/pdf",
                   "tsm/embed/__init__", "tsm/embed/worker", "sudachipy/__init__",
                   "sudachipy/command_line", "json", "io", "zlib"):  # fmt: skip
        path = root / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({module!r} + '\\n')\n")


def run(clone: Path, *args: str, timeout: float = 300) -> Any:
    """The real CLI in the clone, as its console script runs it (the conftest's `tsm`
    fixture runs `python -m tsm`, which would itself import the planted package)."""
    env = {k: v for k, v in os.environ.items() if k != "TSM_AUTOSTART"}  # autostart on
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "tsm", *args, "-f", "json"],
        capture_output=True, text=True, cwd=clone, env=env, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_child_process_imports_the_repositorys_modules(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    clone = tmp_path / "clone"
    (clone / "notes").mkdir(parents=True)
    (clone / "notes" / "a.md").write_text("# Widgets\n\nwidgets are small parts\n")
    (clone / "notes" / "guide.pdf").write_bytes(
        (EXAMPLES / "research" / "git-admin-guide.pdf").read_bytes()
    )
    (clone / "tsm.toml").write_text("")
    plant(clone, marker)
    state = clone / ".tsm"
    state.mkdir(mode=0o700)
    (state / "user_dict.csv").write_text(USER_DICT_ROW, encoding="utf-8")
    try:
        run(clone, "index")  # the PDF reader's child and the user dictionary's build
        assert "notes/guide.pdf" in {d["path"] for d in run(clone, "list")}
        run(clone, "search", "ふーばー widgets")  # starts the daemon
        run(clone, "start")
        assert run(clone, "status")["daemon"]["state"] == "running"
        run(clone, "index", "notes")  # the daemon's embedding worker
    finally:
        run(clone, "stop")
    assert not marker.exists(), marker.read_text()
