"""Normalised names a link can use to point at a document, as Obsidian resolves them:
file stem, path, title and aliases (case-insensitive, without the .md suffix)."""

from __future__ import annotations

import json
import posixpath
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .connect import Connection

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


def fill_names_and_link_keys(conn: Connection, row_id: str, row_id_type: str) -> None:
    """The names and link keys of the documents stored before m002 (`row_id` names a link's
    row, bound as `row_id_type`): the same rows on both engines."""
    for doc_id, path, title, aliases in conn.execute(
        "SELECT id, path, title, aliases FROM documents"
    ).fetchall():
        conn.executemany(
            "INSERT INTO names(document_id, name, kind) VALUES (?, ?, ?)",
            [(doc_id, n, k) for n, k in document_names(path, title, json.loads(aliases or "[]"))],
        )
    for rowid, target, link_type in conn.execute(
        f"SELECT {row_id}, target, link_type FROM links"
    ).fetchall():
        conn.execute(
            f"UPDATE links SET target_key = ? WHERE {row_id.split('::')[0]} = {row_id_type}",
            (link_key(target, link_type), rowid),
        )
