"""Related documents from the link graph: wikilinks (resolved by file name, title or alias,
as Obsidian does), relative Markdown links, and backlinks."""

from __future__ import annotations

import json
import posixpath
import sqlite3
from collections.abc import Iterable

from ..models import Related

# A link the author wrote says more than one pointing back at the note.
STRENGTH = {"wikilink": 1.0, "markdown": 1.0, "backlink": 0.7}
MAX_RELATED = 5


def _norm(name: str) -> str:
    name = name.strip().lower()
    for suffix in (".md", ".markdown"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def _keys(path: str, title: str, aliases: Iterable[str]) -> set[str]:
    stem = posixpath.basename(path)
    return {_norm(stem), _norm(path), _norm(title), *(_norm(a) for a in aliases)}


class LinkGraph:
    """Resolves link targets against the indexed documents, lazily, once per search."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._by_key: dict[str, int] | None = None
        self._paths: dict[int, str] = {}

    def _index(self) -> dict[str, int]:
        if self._by_key is None:
            self._by_key = {}
            for doc_id, path, title, aliases in self.conn.execute(
                    "SELECT id, path, title, aliases FROM documents ORDER BY id DESC"):
                self._paths[doc_id] = path
                for key in _keys(path, title, json.loads(aliases or "[]")):
                    self._by_key[key] = doc_id
        return self._by_key

    def resolve(self, source_path: str, target: str, link_type: str) -> int | None:
        index = self._index()
        if link_type == "markdown":
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_path), target))
            return index.get(_norm(joined))
        return index.get(_norm(target)) or index.get(_norm(posixpath.basename(target)))

    def related(self, doc_id: int, path: str, title: str, aliases: Iterable[str],
                exclude: set[int]) -> tuple[Related, ...]:
        found: dict[int, Related] = {}
        for target, link_type in self.conn.execute(
                "SELECT target, link_type FROM links WHERE document_id = ?", (doc_id,)):
            other = self.resolve(path, target, link_type)
            if other is not None and other != doc_id and other not in exclude:
                found.setdefault(other, Related(self._paths[other], link_type,
                                                STRENGTH[link_type]))
        keys = _keys(path, title, aliases)
        names = sorted(keys | {posixpath.basename(path)})
        marks = ",".join("?" * len(names))
        for source_id, source_path, target, link_type in self.conn.execute(
                f"""SELECT l.document_id, d.path, l.target, l.link_type FROM links l
                    JOIN documents d ON d.id = l.document_id
                    WHERE lower(l.target) IN ({marks}) OR l.target LIKE ?""",
                (*names, "%" + posixpath.basename(path))):
            if source_id in exclude or source_id == doc_id:
                continue
            if self.resolve(source_path, target, link_type) == doc_id:
                if source_id in found:  # linked both ways: the strongest relation
                    found[source_id] = Related(found[source_id].path, found[source_id].link_type,
                                               1.0 + STRENGTH["backlink"] / 2)
                else:
                    found[source_id] = Related(source_path, "backlink", STRENGTH["backlink"])
        ranked = sorted(found.values(), key=lambda r: (-r.strength, r.path))
        return tuple(ranked[:MAX_RELATED])
