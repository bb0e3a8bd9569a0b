"""An error as the user sees it: the contract's one-line JSON object, or a human line with
its hint. Used by the CLI and by the daemon answering a forwarded command line."""

from __future__ import annotations

from ..errors import TsmError


def error_text(error: TsmError, fmt: str) -> str:
    if fmt == "json":
        from .json_format import error_object

        return str(error_object(error))
    from .human_format import one_line

    hint = f"\n  hint: {one_line(error.hint)}" if error.hint else ""
    return f"tsm: error: {one_line(error.message)}{hint}"
