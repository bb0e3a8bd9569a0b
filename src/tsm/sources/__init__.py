"""Stage 1: files → Document. Readers never touch the DB; `discover` walks the index root."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..models import Document
from ..workspace import IgnoreRules
from .base import Reader, SkipFile, decode_text

if TYPE_CHECKING:
    from .files import Reach

__all__ = ["READERS", "Reader", "SkipFile", "decode_text", "discover", "load_bytes", "reader_for"]

MAX_FILE_BYTES = 10 * 1024 * 1024


def _markdown(path: Path, rel: str, data: bytes) -> Document:
    from . import markdown

    return markdown.read(path, rel, data)


def _pdf(path: Path, rel: str, data: bytes) -> Document:
    from . import pdf

    return pdf.read(path, rel, data)


def _text(path: Path, rel: str, data: bytes) -> Document:
    from . import text

    return text.read(path, rel, data)


# Suffix → reader. Session transcripts (.jsonl) are read only from session folders.
READERS: dict[str, Reader] = {
    ".md": _markdown,
    ".markdown": _markdown,
    ".pdf": _pdf,
    ".txt": _text,
    ".text": _text,
}


def reader_for(path: Path) -> Reader | None:
    return READERS.get(path.suffix.lower())


Unwalkable = Callable[[Path, str], None]
"""Told of each folder the walk could not take: its path and why."""


def discover(
    root: Path, start: Path, rules: IgnoreRules, unwalkable: Unwalkable | None = None
) -> Iterator[Path]:
    """Yield indexable files under `start` (a dir or file inside `root`), honouring ignore rules.

    A folder that cannot be listed (unreadable, gone since its parent was listed, a path
    past PATH_MAX) is passed to `unwalkable` with its reason, never silently dropped;
    symlinked directories are not followed so a link loop cannot hang indexing nor lead out
    of the root; a symlinked file is yielded and checked by the caller (sources/files.py).
    """
    if not start.is_dir():  # a file, or a FIFO or device the caller reports as skipped
        if reader_for(start):
            yield start
        return
    for here, dirnames, filenames in walk(start, unwalkable):
        rel_dir = here.relative_to(root).as_posix() if here != root else ""
        dirnames[:] = [
            d for d in dirnames if not rules.ignored(f"{rel_dir}/{d}".lstrip("/"), is_dir=True)
        ]
        for name in filenames:
            rel = f"{rel_dir}/{name}".lstrip("/")
            path = here / name
            if reader_for(path) and not rules.ignored(rel):
                yield path


def walk(
    start: Path, unwalkable: Unwalkable | None = None
) -> Iterator[tuple[Path, list[str], list[str]]]:
    """os.walk in name order, links to folders not followed, with each folder it could
    not list reported to `unwalkable` (os.walk drops them without a word)."""

    def report(exc: OSError) -> None:
        if unwalkable is not None:
            unwalkable(Path(exc.filename or start), unwalkable_reason(exc))

    for dirpath, dirnames, filenames in os.walk(start, onerror=report):
        dirnames.sort()
        yield Path(dirpath), dirnames, sorted(filenames)


def unwalkable_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "folder gone while indexing (moved or deleted)"
    return f"folder unreadable: {exc.strerror or exc}"


def load_bytes(path: Path, limit: int = MAX_FILE_BYTES, reach: Reach | None = None) -> bytes:
    """Read a regular file whole, refusing special files and files over `limit` bytes; I/O
    errors are transient skips (see sources/files.py). With `reach`, a file whose real path
    is not inside it is refused, even when a folder above it became a link meanwhile."""
    from .files import read_capped

    return reach.read(path, limit) if reach is not None else read_capped(path, limit)
