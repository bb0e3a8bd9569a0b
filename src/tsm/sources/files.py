"""Opening a file to index it, safely: only regular files whose real location is inside the
index root (or a configured content dir), read with a hard size cap, never following a link
swapped in after the check. A hostile or unlucky folder (links to ~/.ssh, FIFOs, /dev/zero,
undecodable names) costs one skipped file, never a hang, a leak or the run."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..statedir import (
    LinkOnTheWay,
    Outside,
    SpecialFile,
    TooLarge,
    read_beneath,
    read_regular,
    read_written_beneath,
)
from ..workspace import IgnoreRules
from .base import SkipFile


@dataclass(frozen=True)
class Reach:
    """Where indexed files may really live: the index root and each content dir, resolved (a
    content dir may be a link to a folder elsewhere that the config chose), minus ignored
    paths (a link to `.git/config` or the state dir is refused like a link outside)."""

    root: Path
    roots: tuple[Path, ...]
    rules: IgnoreRules | None = None

    @classmethod
    def of(
        cls, index_root: Path, content_dirs: Iterable[str] = (), rules: IgnoreRules | None = None
    ) -> Reach:
        root = Path(os.path.realpath(index_root))
        roots = [root]
        for rel in content_dirs:
            real = Path(os.path.realpath(index_root / rel))
            if not any(real.is_relative_to(r) for r in roots):
                roots.append(real)
        return cls(root, tuple(roots), rules)

    def resolve(self, path: Path) -> Path:
        """The real path of `path`; SkipFile when a symlink leads outside or to an ignored
        path. Costs one lstat per path component: call it for links, not every file."""
        try:
            real = Path(os.path.realpath(path))
        except OSError as exc:  # a link in the path vanished while it was being read
            raise SkipFile(f"unreadable: {exc.strerror or exc}", transient=True) from None
        if not any(real.is_relative_to(r) for r in self.roots):
            raise _links_outside(str(real))
        if self.rules is not None and real != self.root and real.is_relative_to(self.root):
            rel = real.relative_to(self.root).as_posix()
            parts = rel.split("/")
            if any(
                self.rules.ignored("/".join(parts[:i]), is_dir=True) for i in range(1, len(parts))
            ) or self.rules.ignored(rel):
                raise SkipFile(f"links to an ignored path ({display(rel)})")
        return real

    def read(self, path: Path, cap: int) -> bytes:
        """read_capped for a file that must really lie inside the reach: its real path is
        checked (resolve), then it is opened from its root down with no link followed
        (statedir.read_beneath). A folder above it swapped for a link out of the root after
        the walk found the file, even between the check and the open, is refused rather
        than followed; an open by the whole path (O_NOFOLLOW guards only its last part)
        read the file of that name outside. A path the walk wrote under a root with no
        link in it is read as written (statedir.read_written_beneath), without the cost of
        resolving it."""
        try:
            return _capped(lambda: read_written_beneath(self.roots, path, cap), cap)
        except LinkOnTheWay:
            pass
        real = self.resolve(path)
        try:
            return _capped(lambda: read_beneath(self.roots, real, cap), cap)
        except Outside as exc:
            raise _links_outside(exc.real) from None


def _links_outside(real: str) -> SkipFile:
    return SkipFile(f"links outside the index root (to {display(real)})")


def read_capped(path: Path, cap: int) -> bytes:
    """Read a regular file whole, at most `cap` bytes (statedir.read_regular): FIFOs,
    sockets and devices are refused before any read, and opening never blocks or follows a
    final symlink. I/O errors are transient skips."""
    return _capped(lambda: read_regular(path, cap), cap)


def _capped(read: Callable[[], bytes], cap: int) -> bytes:
    """`read()`, its refusals and I/O errors as SkipFile."""
    try:
        return read()
    except SpecialFile as exc:
        raise SkipFile(f"not a regular file: {exc.kind}") from None
    except TooLarge as exc:
        raise SkipFile(_too_large(cap, exc.size)) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a component became a link after resolving
            raise SkipFile("is a symbolic link (changed while indexing)") from None
        raise SkipFile(f"unreadable: {exc.strerror or exc}", transient=True) from None


def _too_large(cap: int, size: int | None) -> str:
    what = f"{size} bytes" if size is not None else "it grew while read"
    return (
        f"larger than {cap / (1024 * 1024):g} MB ({what}); "
        "raise index.max_file_mb (TSM_MAX_FILE_MB) to index it"
    )


def storable(rel: str) -> bool:
    """A path the index can store: valid Unicode (an undecodable name arrives from the file
    system with surrogate escapes, which SQLite and JSON cannot hold)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display(path: str) -> str:
    """A path safe to print and store in a report: undecodable bytes shown as \\xNN."""
    return path if storable(path) else os.fsencode(path).decode("utf-8", "backslashreplace")
