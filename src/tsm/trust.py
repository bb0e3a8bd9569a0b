"""The user's list of trusted index roots (docs/trust-model.md): `tsm init`, `tsm trust` and
`tsm untrust` write it; locate.py and the plugin's hooks read it.

A plain file of absolute paths in the user's config dir, replaced atomically (a new 0600 file
beside it, then rename) under a lock, so two commands at once cannot lose an entry and a
symlink planted at its name is replaced, never followed.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path

from . import locate
from .errors import SystemFailure, UserError

HEADER = (
    "# Index roots whose tsm.toml you trust (one absolute path per line).\n"
    "# Written by `tsm init` and `tsm trust`; see docs/trust-model.md.\n"
)


def trust_file(environ: Mapping[str, str]) -> Path:
    return Path(locate.user_config_dir(environ)) / locate.TRUST_FILE


def listed(environ: Mapping[str, str]) -> list[str]:
    """The trusted roots, sorted."""
    return sorted(locate.trusted_roots(environ))


def add(root: Path, environ: Mapping[str, str]) -> bool:
    """Trust `root` (a directory; symlinks resolved). False when it already was."""
    folder = _checked_root(root)
    with _locked(environ):
        roots = locate.trusted_roots(environ)
        if folder in roots:
            return False
        _write(trust_file(environ), roots | {folder})
    return True


def remove(root: Path, environ: Mapping[str, str]) -> bool:
    """Stop trusting `root`. False when it was not trusted."""
    folder = os.path.realpath(root)
    with _locked(environ):
        roots = locate.trusted_roots(environ)
        if folder not in roots:
            return False
        _write(trust_file(environ), roots - {folder})
    return True


def _checked_root(root: Path) -> str:
    folder = os.path.realpath(root)
    if not os.path.isdir(folder):
        raise UserError(f"{root} is not a directory", "name the folder that holds your notes")
    if "\n" in folder or "\r" in folder:
        raise UserError(
            f"{root!r}: a folder whose name holds a line break cannot be trusted",
            "rename it, or set TSM_INDEX_ROOT to it in your own environment",
        )
    return folder


class _locked:
    """An exclusive lock on a file beside the trust file, for one read-modify-write."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.path = trust_file(environ).with_name(f".{locate.TRUST_FILE}.lock")
        self.fd = -1

    def __enter__(self) -> None:
        _config_dir(self.path.parent)
        try:
            self.fd = os.open(
                self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            raise SystemFailure(
                f"cannot write {self.path}: {exc.strerror}",
                f"check the permissions of {self.path.parent}",
            ) from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing releases the lock


def _config_dir(folder: Path) -> None:
    """The user's tsm config dir, created private (0700) when missing."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemFailure(f"cannot create {folder}: {exc.strerror}") from None


def _write(path: Path, roots: set[str]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = HEADER + "".join(f"{root}\n" for root in sorted(roots))
    try:
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, path)
        finally:
            if temporary.exists():
                temporary.unlink()
    except OSError as exc:
        raise SystemFailure(
            f"cannot write {path}: {exc.strerror}", f"check the permissions of {path.parent}"
        ) from None
