"""The log files of the daemon and the MCP server: private (statedir rules: 0600, no
symlinks), rotated, and one line per record, so that a filename or config value holding a
newline or a terminal escape can neither forge a log line nor reach the terminal that
reads the log."""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import re
from pathlib import Path
from typing import cast

from . import statedir

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators (str.splitlines
# breaks on them too).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
TRACEBACK_PREFIX = "    | "


def escape_controls(text: str) -> str:
    """`text` with every control character written out (`\\n`, `\\x1b`, `\\u2028`)."""
    return _CONTROL.sub(lambda m: _NAMED.get(m.group()) or _code(ord(m.group())), text)


def _code(point: int) -> str:
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


class OneLineFormatter(logging.Formatter):
    """The message escaped onto one line; a traceback follows on lines that start with
    TRACEBACK_PREFIX, each escaped too, so none can pass for a record of its own."""

    def format(self, record: logging.LogRecord) -> str:
        saved = (record.msg, record.args, record.exc_info, record.exc_text, record.stack_info)
        record.msg, record.args = escape_controls(record.getMessage()), None
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            line = super().format(record)
        finally:
            (record.msg, record.args, record.exc_info, record.exc_text, record.stack_info) = saved
        blocks = []
        if record.exc_info:
            blocks.append(self.formatException(record.exc_info))
        if record.stack_info:
            blocks.append(self.formatStack(record.stack_info))
        for block in blocks:
            line += "".join(
                f"\n{TRACEBACK_PREFIX}{escape_controls(part)}" for part in block.splitlines()
            )
        return line


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """RotatingFileHandler whose file is opened by `statedir.open_private`."""

    def _open(self) -> io.TextIOWrapper:
        fd = statedir.open_private(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        return cast(
            io.TextIOWrapper, os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
        )


def private_log_handler(state_dir: Path, name: str, fmt: str) -> PrivateRotatingFileHandler:
    """<state dir>/logs/NAME, rotated at 5 MB with 3 kept, one escaped line per record."""
    handler = PrivateRotatingFileHandler(
        statedir.logs_dir(state_dir) / name,
        maxBytes=5 * 1024 * 1024,
        backupCount=3,
        encoding="utf-8",
    )
    handler.setFormatter(OneLineFormatter(fmt))
    return handler
