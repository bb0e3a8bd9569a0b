"""The sample vault as the tests see it: only the files git tracks in examples/vault.

A demo run, an editor or a stray daemon may leave an index (`.tsm/`), sockets or notes in
the checkout; copying those would make a test depend on what ran before it. Outside a git
checkout (an unpacked sdist) every file is copied except a `.tsm` state dir.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_VAULT = REPO / "examples" / "vault"


def tracked_files(folder: Path = SAMPLE_VAULT) -> list[str] | None:
    """Paths relative to `folder` that git tracks there, or None when git cannot say."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-z", "--", "."], capture_output=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return [name for name in proc.stdout.decode().split("\0") if name]


def copy_tracked(dest: Path, source: Path = SAMPLE_VAULT) -> Path:
    """Copy the tracked files of `source` to `dest` (a new folder), mtimes preserved."""
    names = tracked_files(source)
    if names is None:
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".tsm"))
        return dest
    dest.mkdir(parents=True)
    for name in names:
        original = source / name
        if not original.is_file():  # deleted in the working tree, not yet committed
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(original, dest / name)
    return dest


def fingerprint(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under `folder` (state dir included): a hash of its bytes and its mtime."""
    return {
        path.relative_to(folder).as_posix(): (
            hashlib.sha1(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
