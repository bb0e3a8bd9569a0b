"""The `search` tool's arguments, generated from the request's declaration (core/request.py):
each field with an MCP name becomes a parameter with its description, its values as an enum
and its bounds, so the schema a model reads and the checks the CLI and the daemon make are
the same declaration. The SDK builds the JSON schema from the signature made here."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, Field
from typing import Annotated, Any, Literal

from mcp.types import CallToolResult
from pydantic import Field as Described

from ..core.request import Option, declared_options, is_list


def search_parameters() -> list[inspect.Parameter]:
    """One keyword parameter per declared MCP argument, in the order of the fields."""
    return [
        inspect.Parameter(
            option.mcp,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=_annotation(declared, option),
            default=_default(declared, option),
        )
        for declared, option in declared_options()
        if option.mcp
    ]


def with_search_signature(tool: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """`tool(**arguments)` with the signature the SDK reads its schema from."""
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        search_parameters(), return_annotation=CallToolResult
    )
    return tool


def _annotation(declared: Field[Any], option: Option) -> Any:
    """The parameter's type, as the SDK turns it into JSON schema: a list field also takes
    one value (models often pass one), a year also a number, fixed values an enum."""
    one: Any = str
    if option.values:
        one = Literal[option.values]  # type: ignore[valid-type]
    elif option.bounds is not None:
        one = int
    if is_list(declared):
        kind: Any = list[one] | one | None  # type: ignore[valid-type]
    elif option.year_number:
        kind = int | str | None
    elif declared.default is None:
        kind = one | None
    else:
        kind = one
    low, high = option.bounds or (None, None)
    return Annotated[kind, Described(description=option.about, ge=low, le=high)]


def _default(declared: Field[Any], option: Option) -> Any:
    if declared.default is MISSING:
        return inspect.Parameter.empty  # required: the query
    return None if is_list(declared) else declared.default
