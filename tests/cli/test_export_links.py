"""`tsm export FILE` writes its temporary file under a fresh name of its own: at the name it
used (`.<file>.<pid>.tmp`, opened with O_TRUNC), a link a repository planted for a range of
pids had the export written into the file it pointed at."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PLANT_AND_EXPORT = """
import os, sys
os.symlink(sys.argv[1], f".backup.tsm.{os.getpid()}.tmp")  # exec keeps the pid
os.execv(sys.executable, [sys.executable, "-P", "-m", "tsm", "export", "backup.tsm"])
"""


def test_export_never_writes_through_a_planted_temporary_name(
    tmp_path: Path, tsm: Any, vault: Path
) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("precious\n")
    assert tsm("index", "--no-embed", "-f", "json", timeout=120).code == 0
    proc = subprocess.run(
        [sys.executable, "-P", "-c", PLANT_AND_EXPORT, str(precious)],
        capture_output=True, text=True, cwd=vault, env=os.environ, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert precious.read_text() == "precious\n"
    export = vault / "backup.tsm"
    assert not export.is_symlink() and export.stat().st_mode & 0o777 == 0o600
    assert tsm("import", "--replace", str(export), "-f", "json", timeout=120).code == 0
