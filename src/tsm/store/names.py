"""Normalised names a link can use to point at a document, as Obsidian resolves them:
file stem, path, title and aliases (case-insensitive, without the .md suffix)."""

from __future__ import annotations

import json
import posixpath
import unicodedata
from collections.abc import Iterable

# Resolution order when several documents share a name: path, then file name, title, alias.
KIND_ORDER = ("path", "stem", "title", "alias")


def normalise(name: str) -> str:
    name = unicodedata.normalize("NFKC", name).strip().lower()
    for suffix in (".md", ".markdown"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def document_names(path: str, title: str, aliases: Iterable[str]) -> list[tuple[str, str]]:
    """(name, kind) rows for a document."""
    rows = {
        (normalise(path), "path"),
        (normalise(posixpath.basename(path)), "stem"),
        (normalise(title), "title"),
    }
    rows |= {(normalise(a), "alias") for a in aliases if a.strip()}
    return sorted(r for r in rows if r[0])


def link_key(target: str, link_type: str) -> str:
    """What a link is looked up by: the file name for Markdown links and path-like wikilinks,
    the whole name otherwise ([[My Note]] may name a title or an alias)."""
    if link_type == "markdown" or "/" in target:
        return normalise(posixpath.basename(target))
    return normalise(target)


def stored_aliases(stored: str | None, path: str) -> tuple[str, ...]:
    """A document's `aliases` column (a JSON list of strings, as tsm writes it) as a tuple.

    An index tsm did not write (a cloned repository's `.tsm/tsm.db`, a damaged file) can
    hold anything there: that is a corrupt index naming the document, exit 2 with the way
    out, not an "unexpected error" (JSONDecodeError, RecursionError) on every search."""
    try:
        value = json.loads(stored or "[]")
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        from ..errors import IndexCorrupt

        raise IndexCorrupt(
            f"the index holds malformed aliases for {path!r} (not a JSON list of strings)",
            "run `tsm rebuild --apply` (it keeps the old index as a backup)",
        )
    return tuple(value)
