"""The error tree. Each class carries its exit code and JSON `kind`; only the CLI boundary
prints them.

    TsmError
    ├── UserError (exit 1, "user_error")
    │   ├── ConfigError
    │   ├── DocumentNotFound
    │   └── InvalidQuery
    └── SystemFailure (exit 2, "system_error")
        ├── IndexCorrupt
        ├── StorageFailure
        ├── EmbedderUnavailable
        ├── DaemonUnreachable
        └── UnsafePath
"""

from __future__ import annotations

from typing import ClassVar


class TsmError(Exception):
    """Base of every error a user may see; `hint` says how to recover."""

    exit_code: ClassVar[int] = 2
    kind: ClassVar[str] = "system_error"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        # Extra fields of the JSON error object (e.g. a failed rebuild's `backup`).
        self.details: dict[str, object] = {}

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UserError(TsmError):
    """The user asked for something invalid: bad argument, missing file, bad config."""

    exit_code = 1
    kind = "user_error"


class ConfigError(UserError):
    """A configuration file or variable holds an invalid value."""


class DocumentNotFound(UserError):
    """No indexed document matches the given path or id."""


class InvalidQuery(UserError):
    """The query or one of its filters cannot be used."""


class SystemFailure(TsmError):
    """Something outside the user's input failed: the DB, the model, the daemon."""

    exit_code = 2
    kind = "system_error"


class IndexCorrupt(SystemFailure):
    """The SQLite database cannot be read or fails its integrity check."""


class StorageFailure(SystemFailure):
    """The index's files cannot be written or read: disk full, read-only, locked, I/O error."""


class EmbedderUnavailable(SystemFailure):
    """The embedding model cannot be loaded or has crashed."""


class VectorsLoading(EmbedderUnavailable):
    """The model or the vector index is still loading (a daemon that has just started): a
    search that may go without vectors is answered from its keywords meanwhile."""


class DaemonUnreachable(SystemFailure):
    """The daemon did not answer, even after a retry."""


class UnsafePath(SystemFailure):
    """A file or folder tsm would write is a symlink, another user's, or not a regular file."""
