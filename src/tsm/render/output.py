"""What a command prints on stdout, in the format asked for: the contract JSON, or human
text with its control characters made visible (human_format.visible), whatever produced
it. The CLI and the daemon answering a forwarded search print through here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import SearchResult

if TYPE_CHECKING:
    from .terminal import Terminal


def rendered(data: Any, human: str, fmt: str) -> str:
    if fmt == "json":
        from .json_format import dumps

        return dumps(data)
    from .human_format import Styled, visible

    # Styled text escaped each field itself and holds our own colours and links.
    return human if isinstance(human, Styled) else visible(human)


def search_output(result: SearchResult, fmt: str, terminal: Terminal | None = None) -> str:
    """The search in `fmt`; human text is dressed for `terminal` (render/terminal.py)."""
    if fmt == "json":
        from .json_format import search_to_dict

        return rendered(search_to_dict(result), "", fmt)
    from .human_format import search_text

    return rendered(None, search_text(result, terminal), fmt)
