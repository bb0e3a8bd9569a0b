"""The reply to an op that failed: a TsmError (the user's mistake, or a known system failure
such as a full disk) travels to the client with its message, hint and exit code, which
reports it as the CLI would; anything else is a bug, logged whole and answered briefly."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..client import protocol
from ..config import Settings
from ..core.knowledge import known_failure
from ..errors import TsmError

log = logging.getLogger("tsm.daemon")


def failure_reply(exc: Exception, op: str, settings: Settings, logs: Path) -> dict[str, Any]:
    if isinstance(exc, TsmError):
        return error_reply(exc)
    known = known_failure(exc, settings)
    if known is not None:
        log.warning("op %s failed: %s", op, known.message)
        return error_reply(known)
    log.exception("op %s failed", op)
    return protocol.error(
        f"daemon error in {op}: {type(exc).__name__}: {exc}",
        kind="system_error",
        hint=f"see the daemon log under {logs}",
    )


def error_reply(exc: TsmError) -> dict[str, Any]:
    return protocol.error(
        exc.message,
        kind=exc.kind,
        exit_code=exc.exit_code,
        hint=exc.hint,
        error_type=type(exc).__name__,
    )
