"""The link graph's lookups (search/related.py), two statements for a page of results: the
links written in its documents and those that may point at them, then the documents their
targets may name. Every statement uses an index (the `names` table and `links.target_key`
of migration m002), so the cost follows the number of links, not the size of the vault."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from . import scope
from .connect import Connection
from .engine import store_of
from .names import KIND_ORDER

# When several documents share a name: a path first, then a file name, title, alias.
_KIND_RANK = " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(KIND_ORDER))


class DocumentPath(NamedTuple):
    """An indexed document a link resolves to."""

    id: int
    path: str


class LinkRow(NamedTuple):
    """A link around a page of results: written in one of its documents (`outgoing`), or
    written in any document under a key that may name one of them (a backlink candidate)."""

    outgoing: bool
    source_id: int
    source_path: str
    target: str
    link_type: str


def links_around(conn: Connection, doc_ids: Sequence[int], keys: Sequence[str]) -> list[LinkRow]:
    """The links written in these documents and every link whose lookup key (names.link_key)
    is one of `keys`, each with the document that holds it: one statement, in no set
    order."""
    visible, params = scope.visible(conn)
    written_in, doc_params = store_of(conn).dialect.in_values("l.document_id", doc_ids, "bigint")
    keyed, key_params = store_of(conn).dialect.in_values("l.target_key", keys, "text")
    rows = conn.execute(
        f"""SELECT 1, l.document_id, d.path, l.target, l.link_type FROM links l
                JOIN documents d ON d.id = l.document_id WHERE {written_in}
            UNION ALL
            SELECT 0, l.document_id, d.path, l.target, l.link_type FROM links l
                JOIN documents d ON d.id = l.document_id
                WHERE {keyed} AND {visible}""",
        (*doc_params, *key_params, *params),
    )
    return [LinkRow(bool(row[0]), *row[1:]) for row in rows]


class NamedDocument(NamedTuple):
    """A document a link target may name: by its path (`kind` "file", for Markdown links),
    or by one of its names (names.KIND_ORDER); `own` when this workspace wrote it."""

    key: str
    kind: str
    id: int
    path: str
    own: bool


def documents_for_targets(
    conn: Connection, paths: Sequence[str], names: Sequence[str]
) -> list[NamedDocument]:
    """The documents at these paths (or with .md or .markdown added: [x](notes/x) may name
    notes/x.md) and those with one of these names (normalised): one statement, in no set
    order; the caller picks, as related.py does."""
    visible, params = scope.visible(conn, "d")
    local, local_params = scope.in_own_workspace(conn, "d")
    files = [p + suffix for p in paths for suffix in ("", ".md", ".markdown")]
    at_path, file_params = store_of(conn).dialect.in_values("d.path", files, "text")
    named, name_params = store_of(conn).dialect.in_values("n.name", names, "text")
    rows = conn.execute(
        f"""SELECT d.path, 'file', d.id, d.path, {local} FROM documents d
                WHERE {at_path} AND {visible}
            UNION ALL
            SELECT n.name, n.kind, d.id, d.path, {local} FROM names n
                JOIN documents d ON d.id = n.document_id
                WHERE {named} AND {visible}""",
        (*local_params, *file_params, *params, *local_params, *name_params, *params),
    )
    return [NamedDocument(key, kind, int(i), path, bool(own)) for key, kind, i, path, own in rows]
