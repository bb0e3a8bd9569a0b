"""Related documents from the link graph: wikilinks (resolved by file name, title or alias,
as Obsidian does), relative Markdown links, and backlinks. Every lookup uses an index
(store/names.py), so the cost follows the number of links, not the size of the vault."""

from __future__ import annotations

import posixpath
import sqlite3
from collections.abc import Iterable

from ..models import Related
from ..store.names import KIND_ORDER, document_names, link_key, normalise

# A link the author wrote says more than one pointing back at the note.
STRENGTH = {"wikilink": 1.0, "markdown": 1.0, "backlink": 0.7}
MUTUAL = 1.0 + STRENGTH["backlink"] / 2  # linked both ways: the strongest relation
MAX_RELATED = 5
_KIND_RANK = " ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(KIND_ORDER))


class LinkGraph:
    """Resolves link targets against the indexed documents, caching lookups per search."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._resolved: dict[tuple[str, str], tuple[int, str] | None] = {}

    def resolve(self, source_path: str, target: str, link_type: str) -> tuple[int, str] | None:
        """(document id, path) of a link's target, or None when it is not indexed."""
        if link_type == "markdown":
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_path), target))
            key = ("markdown", joined)
        else:
            key = ("wikilink", normalise(target))
        if key not in self._resolved:
            self._resolved[key] = self._lookup(*key)
        return self._resolved[key]

    def _lookup(self, link_type: str, target: str) -> tuple[int, str] | None:
        if link_type == "markdown":
            row = self.conn.execute(
                "SELECT id, path FROM documents WHERE path IN (?, ?, ?) LIMIT 1",
                (target, target + ".md", target + ".markdown"),
            ).fetchone()
        else:
            row = self.conn.execute(
                f"""SELECT d.id, d.path FROM names n JOIN documents d ON d.id = n.document_id
                    WHERE n.name IN (?, ?) ORDER BY CASE n.kind {_KIND_RANK} END, d.id
                    LIMIT 1""",
                (target, normalise(posixpath.basename(target))),
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def related(
        self, doc_id: int, path: str, title: str, aliases: Iterable[str], exclude: set[int]
    ) -> tuple[Related, ...]:
        found: dict[int, Related] = {}
        for target, link_type in self.conn.execute(
            "SELECT target, link_type FROM links WHERE document_id = ?", (doc_id,)
        ):
            resolved = self.resolve(path, target, link_type)
            if resolved is not None and resolved[0] != doc_id and resolved[0] not in exclude:
                found.setdefault(resolved[0], Related(resolved[1], link_type, STRENGTH[link_type]))
        keys = sorted(
            {name for name, _ in document_names(path, title, aliases)}
            | {link_key(path, "markdown")}
        )
        marks = ",".join("?" * len(keys))
        for source_id, source_path, target, link_type in self.conn.execute(
            f"""SELECT l.document_id, d.path, l.target, l.link_type FROM links l
                    JOIN documents d ON d.id = l.document_id
                    WHERE l.target_key IN ({marks})""",
            keys,
        ):
            if source_id in exclude or source_id == doc_id:
                continue
            resolved = self.resolve(source_path, target, link_type)
            if resolved is None or resolved[0] != doc_id:
                continue
            if source_id in found:
                found[source_id] = Related(
                    found[source_id].path, found[source_id].link_type, MUTUAL
                )
            else:
                found[source_id] = Related(source_path, "backlink", STRENGTH["backlink"])
        ranked = sorted(found.values(), key=lambda r: (-r.strength, r.path))
        return tuple(ranked[:MAX_RELATED])
