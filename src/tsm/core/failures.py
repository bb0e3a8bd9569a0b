"""A failure of the index (a full disk, a lock, a corrupt file, a PostgreSQL server that
went away) as the error a user reads. The interfaces' error boundaries ask here, so they
never reach into the store to name what went wrong (store/failures.py knows how)."""

from __future__ import annotations

from pathlib import Path

from ..errors import TsmError


def translate(exc: BaseException, store_key: Path | str | None = None) -> TsmError | None:
    """The TsmError for a SQLite, PostgreSQL or OS error; None for anything else, which
    stays a bug. `store_key` names the index (`settings.store_key`)."""
    from ..store.failures import translate as store_failure

    return store_failure(exc, store_key)
