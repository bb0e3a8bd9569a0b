"""A search request, declared once: each field of `SearchRequest` carries how it is asked
for (its command-line flag and help, its MCP argument and description, the values and
bounds it accepts). The `tsm search` grammar (commandline/search.py), the daemon's wire
check (`from_wire`) and the MCP tool's schema (mcp/search_schema.py) are generated from
these declarations, so a new search flag is one field here and reaches every interface.

Light on purpose: the standard library only. The query parser (dates, validation of text
and filters) runs when the core turns the request into a Query."""

from __future__ import annotations

import datetime as dt
import os
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..errors import InvalidQuery, UserError
from ..models import DOCUMENT_TYPES, FALLBACKS, MAX_TOP_K, SEARCH_MODES

if TYPE_CHECKING:
    from ..search.query import Query


@dataclass(frozen=True)
class Option:
    """How one request field is asked for. Every interface reads it: the command line
    (`flags`, `help`, `metavar`, `switches`), the MCP tool (`mcp`, `about`) and the checks
    all three share (`values`, `bounds`)."""

    flags: tuple[str, ...] = ()  # empty: not a flag of its own (the query, the clock)
    help: str = ""
    metavar: str | None = None
    # One flag per value instead of a flag taking one (--fts-only sets mode to "fts").
    switches: tuple[tuple[str, str, str], ...] = ()  # (flag, value, help)
    mcp: str | None = None  # the MCP argument's name; None: not an MCP argument
    about: str = ""  # the MCP argument's description, written for a model
    values: tuple[str, ...] = ()  # the only values it takes
    any_case: bool = False  # values given in any letter case (the query builder folds them)
    bounds: tuple[int, int] | None = None  # a whole number from low to high
    year_number: bool = False  # a year typed as text, which an MCP client may send as a number

    @property
    def label(self) -> str:
        """How an error names the field: its long flag, as the user typed it."""
        return self.flags[-1] if self.flags else ""


def _option(**declared: Any) -> Any:
    return {"option": Option(**declared)}


_DATE = "YYYY, YYYY-MM or YYYY-MM-DD"


@dataclass(frozen=True)
class SearchRequest:
    """What was asked, before parsing: the text as typed and the flags as given."""

    text: str = field(
        metadata=_option(
            mcp="query",
            about="What to look for, in words likely to appear in the notes (English or Japanese).",
        )
    )
    top_k: int | None = field(  # None: the `search.top_k` setting
        default=None,
        metadata=_option(
            flags=("-k", "--top-k"),
            help="results to return (default 10)",
            bounds=(1, MAX_TOP_K),
            mcp="top_k",
            about="Results to return (default 10).",
        ),
    )
    mode: str = field(
        default="hybrid",
        metadata=_option(
            switches=(
                ("--fts-only", "fts", "keyword search only"),
                ("--vec-only", "vector", "vector search only"),
            ),
            values=SEARCH_MODES,
            mcp="mode",
            about="hybrid, fts (keywords) or vector (meaning).",
        ),
    )
    fallback: str = field(
        default="auto",
        metadata=_option(
            flags=("--fallback",),
            help="when vectors are unavailable (no model, nothing embedded yet): auto and "
            "fts-only return keyword results with a warning (--vec-only still fails), error "
            "fails (exit 2)",
            values=FALLBACKS,
            mcp="fallback",
            about="When vectors are unavailable: auto or fts-only return keyword results "
            "with a warning (mode vector still fails), error fails.",
        ),
    )
    after: str | None = field(
        default=None,
        metadata=_option(
            flags=("--after",),
            metavar="DATE",
            help="only documents dated on/after YYYY[-MM[-DD]]",
            mcp="after",
            about=f"Only documents dated on/after {_DATE}.",
        ),
    )
    before: str | None = field(
        default=None,
        metadata=_option(
            flags=("--before",),
            metavar="DATE",
            help="only documents dated on/before YYYY[-MM[-DD]]",
            mcp="before",
            about=f"Only documents dated on/before {_DATE}.",
        ),
    )
    recent: str | None = field(
        default=None,
        metadata=_option(
            flags=("--recent",),
            metavar="SPAN",
            help="only the last 30d, 2w, 3m …",
            mcp="recent",
            about="Only the last span: 30d, 2w, 3m, 1y.",
        ),
    )
    year: str | None = field(
        default=None,
        metadata=_option(
            flags=("--year",),
            metavar="YYYY",
            help="only documents dated in that year",
            mcp="year",
            about="Only documents dated in this year, e.g. 2025.",
            year_number=True,
        ),
    )
    paths: tuple[str, ...] = field(
        default=(),
        metadata=_option(
            flags=("--path",),
            metavar="PREFIX",
            help="only documents under this folder (or this file), read from the current "
            "folder (from the index root when that does not lead into it) (repeatable, OR)",
            mcp="path",
            about='Only documents under these relative path prefixes, e.g. ["notes/"] (OR).',
        ),
    )
    tags: tuple[str, ...] = field(
        default=(),
        metadata=_option(
            flags=("--tag",),
            metavar="TAG",
            help="only documents with this tag (repeatable, all must match)",
            mcp="tag",
            about="Only documents with all of these tags (see list_tags).",
        ),
    )
    types: tuple[str, ...] = field(
        default=(),
        metadata=_option(
            flags=("--type",),
            metavar="TYPE",
            help="markdown, pdf, text or session (repeatable)",
            values=DOCUMENT_TYPES,
            any_case=True,
            mcp="type",
            about="Only these document types (OR).",
        ),
    )
    categories: tuple[str, ...] = field(
        default=(),
        metadata=_option(
            flags=("--category",),
            metavar="NAME",
            help="only this category: a content dir's, else the top folder's (repeatable, OR)",
            mcp="category",
            about="Only these categories (OR): a content dir's category, else the top "
            "folder's name (daily, knowledge, session …), as in source.category.",
        ),
    )
    lang: str | None = field(
        default=None,
        metadata=_option(
            flags=("--lang",),
            help="only passages in Japanese (ja: they hold kana) or in English (en: the rest)",
            values=("ja", "en"),
            mcp="lang",
            about="Only passages in this language: ja (Japanese: they hold kana) or en "
            "(English: the rest).",
        ),
    )
    include_content: int = field(
        default=0,
        metadata=_option(
            flags=("--include-content",),
            metavar="N",
            help="add the whole document text to the top N results",
            bounds=(0, MAX_TOP_K),
            mcp="include_content",
            about="Add the whole document text to the top N results.",
        ),
    )
    now: dt.datetime = field(default_factory=dt.datetime.now)

    def __post_init__(self) -> None:
        for declared, option in declared_options():
            check_value(option, declared.name, getattr(self, declared.name))

    def query(self, default_top_k: int) -> Query:
        """The parsed, validated Query (dates pulled out of the text, flags checked): every
        field but the clock goes to the query builder under its own name."""
        from ..search.query import build_query

        given = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "now"}
        if self.top_k is None:
            given["top_k"] = default_top_k
        return build_query(today=self.now.date(), **given)

    # -- the daemon's wire form -------------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        """The request as JSON, without the fields left at their default: a daemon started
        before a field was added still reads every request that does not use it."""
        data = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != f.default  # MISSING for text and now: always sent
        }
        data["now"] = self.now.isoformat()
        return data

    @classmethod
    def from_wire(cls, data: object) -> SearchRequest:
        """A request off the socket, checked field by field against the field's type, values
        and bounds: any local process of the user may write to it, so a wrongly typed or
        out-of-range value is the client's error (exit 1), not a crash."""
        if not isinstance(data, dict):
            raise UserError("the search request must be an object")
        hints = _field_types()
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name not in hints:
                raise UserError(
                    f"unknown search field {name!r}", "known: " + ", ".join(sorted(hints))
                )
            values[name] = _from_json(name, hints[name], value)
        if "text" not in values:
            raise UserError("the search request has no text")
        return cls(**values)

    @classmethod
    def for_warm_up(cls, mode: str = "hybrid") -> SearchRequest:
        """A throw-away search that loads the tokenizer's dictionary, the model and the
        vector matrix (`mode` "fts": the keyword side alone), so that a long-lived process
        answers its first real search warm."""
        from ..search.query import WARM_UP_QUERY

        return cls(WARM_UP_QUERY, top_k=1, mode=mode, fallback="fts-only")


def declared_options() -> Iterator[tuple[Field[Any], Option]]:
    """Each field that is asked for, with its declaration, in the order of the fields."""
    for declared in fields(SearchRequest):
        option = declared.metadata.get("option")
        if option is not None:
            yield declared, option


def is_list(declared: Field[Any]) -> bool:
    """Whether a field holds several values (a repeatable flag, a JSON list)."""
    return typing.get_origin(_field_types()[declared.name]) is tuple


def check_value(option: Option, name: str, value: object) -> None:
    """The values and bounds a field accepts, whichever interface it came through; the
    command line checks the same while parsing (commandline/search.py)."""
    label = option.label or name
    if option.bounds is not None and value is not None:
        low, high = option.bounds
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidQuery(
                f"{label} must be a whole number from {low} to {high}, got {value!r}"
            )
    if option.values and value is not None:  # None: not asked for
        for item in value if isinstance(value, tuple) else (value,):
            folded = item.lower() if option.any_case and isinstance(item, str) else item
            if folded not in option.values:
                raise InvalidQuery(f"unknown {label} {item!r}", "use " + ", ".join(option.values))


_TYPES: dict[str, Any] = {}


def _field_types() -> dict[str, Any]:
    """Each field's type, evaluated (the annotations are strings here)."""
    if not _TYPES:
        _TYPES.update(typing.get_type_hints(SearchRequest))
    return _TYPES


def _from_json(name: str, hint: Any, value: object) -> Any:
    """A JSON value as the field's type, or the client's error naming the field."""
    if hint is dt.datetime:
        if not isinstance(value, str):
            raise UserError(f"{name!r} must be an ISO date string")
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            raise UserError(f"{name!r} is not an ISO date: {value[:40]!r}") from None
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UserError(f"search field {name!r} must be a list of strings")
        return tuple(value)
    accepted = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise UserError(f"search field {name!r} has the wrong type ({type(value).__name__})")
    return value


# -- the clock ---------------------------------------------------------------------------------
def clock(environ: Mapping[str, str] | None = None) -> dt.datetime:
    """Now, or TSM_NOW (ISO date/time) so results are reproducible in tests."""
    fixed = (os.environ if environ is None else environ).get("TSM_NOW")
    if fixed:
        try:
            return dt.datetime.fromisoformat(fixed)
        except ValueError:
            raise UserError(
                f"TSM_NOW={fixed!r} is not an ISO date", "example: 2026-03-18"
            ) from None
    return dt.datetime.now()


# -- MCP tool arguments -------------------------------------------------------------------------
def from_tool_arguments(
    arguments: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> SearchRequest:
    """A request from an MCP client's `search` arguments, named as each field's `mcp`
    declares. A model often passes one string where a list is expected, and a year as a
    number: both are taken. An argument left out or null keeps the field's default."""
    by_name = {option.mcp: (declared, option) for declared, option in declared_options()}
    values: dict[str, Any] = {}
    for name, value in arguments.items():
        if name not in by_name:
            raise UserError(f"unknown search argument {name!r}")
        declared, option = by_name[name]
        if value is None:
            continue
        if is_list(declared):
            value = tuple(value) if isinstance(value, list) else (value,)
        elif option.year_number and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        values[declared.name] = value
    if "text" not in values:
        raise UserError("the search has no query")
    return SearchRequest(**values, now=clock(environ))
