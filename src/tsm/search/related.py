"""Related documents from the link graph: wikilinks (resolved by file name, title or alias,
as Obsidian does), relative Markdown links, and backlinks. For a page of results the store
is read twice, whatever its size: the links around its documents, then the documents their
targets name (store/links.py); every lookup uses an index, so the cost follows the number of
links, not the size of the vault."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..models import Related
from ..store import links
from ..store.connect import Connection
from ..store.links import DocumentPath, LinkRow
from ..store.names import KIND_ORDER, document_names, link_key, normalise

# A link the author wrote says more than one pointing back at the note.
STRENGTH = {"wikilink": 1.0, "markdown": 1.0, "backlink": 0.7}
MUTUAL = 1.0 + STRENGTH["backlink"] / 2  # linked both ways: the strongest relation
MAX_RELATED = 5
# Which of the files a Markdown link may name wins: as written, then with a suffix.
_FILE_ORDER = ("", ".markdown", ".md")


@dataclass(frozen=True)
class LinkedDocument:
    """A document of a page of results, as its links name it."""

    id: int
    path: str
    title: str
    aliases: tuple[str, ...]

    def keys(self) -> list[str]:
        """The lookup keys (names.link_key) of every link that may point at it."""
        names = {name for name, _ in document_names(self.path, self.title, self.aliases)}
        return sorted(names | {link_key(self.path, "markdown")})


def related_documents(
    conn: Connection, docs: Sequence[LinkedDocument]
) -> dict[int, tuple[Related, ...]]:
    """Each document's related documents, strongest first, none of them on the page."""
    if not docs:
        return {}
    keys = sorted({key for doc in docs for key in doc.keys()})
    around = links.links_around(conn, [d.id for d in docs], keys)
    resolved = _resolve(conn, around)
    shown = {d.id for d in docs}
    return {doc.id: _related(doc, around, resolved, shown) for doc in docs}


def _target(source_path: str, target: str, link_type: str) -> tuple[str, str]:
    """What a link's target is looked up as: a path for a Markdown link, a name otherwise."""
    if link_type == "markdown":
        return "markdown", posixpath.normpath(
            posixpath.join(posixpath.dirname(source_path), target)
        )
    return "wikilink", normalise(target)


def _resolve(conn: Connection, around: Iterable[LinkRow]) -> dict[tuple[str, str], DocumentPath]:
    """The document each link target names, for those that name an indexed one."""
    targets = {_target(row.source_path, row.target, row.link_type) for row in around}
    paths = sorted(t for kind, t in targets if kind == "markdown")
    wikis = sorted(t for kind, t in targets if kind == "wikilink")
    names = sorted({n for t in wikis for n in (t, normalise(posixpath.basename(t)))})
    if not paths and not names:
        return {}
    found = links.documents_for_targets(conn, paths, names)
    resolved: dict[tuple[str, str], DocumentPath] = {}
    for path in paths:
        files = {path + suffix: n for n, suffix in enumerate(_FILE_ORDER)}
        rows = [f for f in found if f.kind == "file" and f.path in files]
        if rows:  # this workspace's first (a team store may hold the path twice)
            best = min(rows, key=lambda r: (not r.own, files[r.path], r.id))
            resolved["markdown", path] = DocumentPath(best.id, best.path)
    for name in wikis:
        wanted = {name, normalise(posixpath.basename(name))}
        rows = [f for f in found if f.kind != "file" and f.key in wanted]
        if rows:
            best = min(rows, key=lambda r: (KIND_ORDER.index(r.kind), r.id))
            resolved["wikilink", name] = DocumentPath(best.id, best.path)
    return resolved


def _related(
    doc: LinkedDocument,
    around: list[LinkRow],
    resolved: dict[tuple[str, str], DocumentPath],
    shown: set[int],
) -> tuple[Related, ...]:
    found: dict[int, Related] = {}
    for link in around:
        if not link.outgoing or link.source_id != doc.id:
            continue
        target = resolved.get(_target(doc.path, link.target, link.link_type))
        if target is not None and target.id != doc.id and target.id not in shown:
            found.setdefault(
                target.id, Related(target.path, link.link_type, STRENGTH[link.link_type])
            )
    keys = set(doc.keys())
    for back in around:
        source_id = back.source_id
        if back.outgoing or source_id in shown or source_id == doc.id:
            continue
        if link_key(back.target, back.link_type) not in keys:
            continue
        target = resolved.get(_target(back.source_path, back.target, back.link_type))
        if target is None or target.id != doc.id:
            continue
        if source_id in found:
            found[source_id] = Related(found[source_id].path, found[source_id].link_type, MUTUAL)
        else:
            found[source_id] = Related(back.source_path, "backlink", STRENGTH["backlink"])
    ranked = sorted(found.values(), key=lambda r: (-r.strength, r.path))
    return tuple(ranked[:MAX_RELATED])
