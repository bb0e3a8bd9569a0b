"""Parsing what the user asked into a Query: text, mode and validated filters (pure)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidQuery
from ..models import DOCUMENT_TYPES as TYPES
from ..models import FALLBACKS, MAX_TOP_K
from ..models import SEARCH_MODES as MODES
from .dates import extract_dates, parse_date_flag, parse_recent

# A long-lived process (daemon, MCP server) runs this once at start, so its first real search
# finds the model, tokenizer and vectors loaded; a Japanese word loads the analyser too.
WARM_UP_QUERY = "warm up 検索"


@dataclass(frozen=True)
class Filters:
    """Restrictions applied before top-k; dates are inclusive."""

    after: dt.date | None = None
    before: dt.date | None = None
    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    date_expression: str | None = None
    categories: tuple[str, ...] = ()
    lang: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.after:
            out["after"] = self.after.isoformat()
        if self.before:
            out["before"] = self.before.isoformat()
        if self.date_expression:
            out["date_expression"] = self.date_expression
        if self.paths:
            out["path"] = list(self.paths)
        if self.tags:
            out["tag"] = list(self.tags)
        if self.types:
            out["type"] = list(self.types)
        if self.categories:
            out["category"] = list(self.categories)
        if self.lang:
            out["lang"] = self.lang
        return out

    @property
    def active(self) -> bool:
        return bool(
            self.after
            or self.before
            or self.paths
            or self.tags
            or self.types
            or self.categories
            or self.lang
        )


@dataclass(frozen=True)
class Query:
    """A search request after parsing: `text` is what is searched (dates removed)."""

    original: str
    text: str
    top_k: int = 10
    mode: str = "hybrid"
    fallback: str = "auto"
    filters: Filters = field(default_factory=Filters)
    include_content: int = 0


# A paragraph is a few hundred characters. A search's time grows with its words (a 100,000-
# character query took 2 s, a 1 MB one through MCP about 10 s): past this it is a document
# pasted by mistake, and an error says so rather than a long wait.
MAX_QUERY_CHARS = 10_000


def build_query(
    text: str | None,
    *,
    today: dt.date,
    top_k: int = 10,
    mode: str = "hybrid",
    fallback: str = "auto",
    after: str | None = None,
    before: str | None = None,
    recent: str | None = None,
    year: str | None = None,
    paths: Sequence[str] = (),
    tags: Sequence[str] = (),
    types: Sequence[str] = (),
    categories: Sequence[str] = (),
    lang: str | None = None,
    include_content: int = 0,
) -> Query:
    """Validate flags and pull a temporal expression out of the text; explicit flags win."""
    original = (text or "").strip()
    if not original:
        raise InvalidQuery("empty query", 'give a query, e.g. tsm search "install git"')
    if len(original) > MAX_QUERY_CHARS:
        raise InvalidQuery(
            f"the query is {len(original):,} characters long; at most {MAX_QUERY_CHARS:,} "
            "are searched",
            "search for the words that matter: a sentence or a paragraph, not a document",
        )
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise InvalidQuery(f"-k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}")
    if mode not in MODES:
        raise InvalidQuery(f"unknown mode {mode!r}", "use hybrid, fts or vector")
    if fallback not in FALLBACKS:
        raise InvalidQuery(f"unknown --fallback {fallback!r}", "use " + ", ".join(FALLBACKS))
    if (
        isinstance(include_content, bool)
        or not isinstance(include_content, int)
        or include_content < 0
    ):
        raise InvalidQuery(
            f"--include-content must be a whole number >= 0, got {include_content!r}"
        )
    remaining, extracted = extract_dates(original, today)
    start = end = None
    try:
        if year is not None:
            if not (len(year) == 4 and year.isdigit()):
                raise ValueError(f"invalid --year {year!r}; example: --year 2025")
            start, end = parse_date_flag(year, end=False), parse_date_flag(year, end=True)
        if recent is not None:
            start = parse_recent(recent, today)
        if after is not None:
            start = parse_date_flag(after, end=False)
        if before is not None:
            end = parse_date_flag(before, end=True)
    except ValueError as exc:
        raise InvalidQuery(str(exc)) from None
    explicit = any(v is not None for v in (after, before, recent, year))
    expression = None
    if extracted is not None and not explicit:
        start, end, expression = extracted.after, extracted.before, extracted.expression
    if start and end and start > end:
        raise InvalidQuery(f"the date range is empty: after {start} is later than before {end}")
    clean_paths = tuple(_check_path(p) for p in paths)
    clean_types = tuple(t.lower() for t in types)
    for kind in clean_types:
        if kind not in TYPES:
            raise InvalidQuery(f"unknown --type {kind!r}", "use " + ", ".join(TYPES))
    clean_tags = tuple(t.strip().lstrip("#").lower() for t in tags if t.strip().lstrip("#"))
    clean_categories = tuple(c.strip() for c in categories if c.strip())
    filters = Filters(
        start, end, clean_paths, clean_tags, clean_types, expression, clean_categories, lang
    )
    searched = remaining.strip() if extracted is not None and not explicit else original
    return Query(original, searched, top_k, mode, fallback, filters, include_content)


def _check_path(prefix: str) -> str:
    if prefix.startswith(("/", "~")) or (len(prefix) > 1 and prefix[1] == ":"):
        raise InvalidQuery(
            f"--path {prefix!r} must be relative to the index root", "example: --path notes/"
        )
    clean = prefix.strip()
    while clean.startswith("./"):
        clean = clean[2:]
    clean = clean.rstrip("/")
    if not clean or ".." in clean.split("/"):
        raise InvalidQuery(f"invalid --path {prefix!r}", "example: --path notes/")
    return clean
