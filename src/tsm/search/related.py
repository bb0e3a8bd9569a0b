"""Related documents from the link graph: wikilinks (resolved by file name, title or alias,
as Obsidian does), relative Markdown links, and backlinks. Every lookup uses an index
(store/links.py), so the cost follows the number of links, not the size of the vault."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from ..models import Related
from ..store import links
from ..store.connect import Connection
from ..store.links import DocumentPath
from ..store.names import document_names, link_key, normalise

# A link the author wrote says more than one pointing back at the note.
STRENGTH = {"wikilink": 1.0, "markdown": 1.0, "backlink": 0.7}
MUTUAL = 1.0 + STRENGTH["backlink"] / 2  # linked both ways: the strongest relation
MAX_RELATED = 5


class LinkGraph:
    """Resolves link targets against the indexed documents, caching lookups per search."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._resolved: dict[tuple[str, str], DocumentPath | None] = {}

    def resolve(self, source_path: str, target: str, link_type: str) -> DocumentPath | None:
        """The document a link's target names, or None when it is not indexed."""
        if link_type == "markdown":
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_path), target))
            key = ("markdown", joined)
        else:
            key = ("wikilink", normalise(target))
        if key not in self._resolved:
            self._resolved[key] = self._lookup(*key)
        return self._resolved[key]

    def _lookup(self, link_type: str, target: str) -> DocumentPath | None:
        if link_type == "markdown":
            return links.document_at_path(self.conn, target)
        return links.document_named(self.conn, target, normalise(posixpath.basename(target)))

    def related(
        self, doc_id: int, path: str, title: str, aliases: Iterable[str], exclude: set[int]
    ) -> tuple[Related, ...]:
        found: dict[int, Related] = {}
        for link in links.links_from(self.conn, doc_id):
            resolved = self.resolve(path, link.target, link.link_type)
            if resolved is not None and resolved.id != doc_id and resolved.id not in exclude:
                found.setdefault(
                    resolved.id, Related(resolved.path, link.link_type, STRENGTH[link.link_type])
                )
        keys = sorted(
            {name for name, _ in document_names(path, title, aliases)}
            | {link_key(path, "markdown")}
        )
        for back in links.links_with_keys(self.conn, keys):
            source_id = back.source_id
            if source_id in exclude or source_id == doc_id:
                continue
            resolved = self.resolve(back.source_path, back.target, back.link_type)
            if resolved is None or resolved.id != doc_id:
                continue
            if source_id in found:
                found[source_id] = Related(
                    found[source_id].path, found[source_id].link_type, MUTUAL
                )
            else:
                found[source_id] = Related(back.source_path, "backlink", STRENGTH["backlink"])
        ranked = sorted(found.values(), key=lambda r: (-r.strength, r.path))
        return tuple(ranked[:MAX_RELATED])
