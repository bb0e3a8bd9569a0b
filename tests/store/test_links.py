"""The link graph's lookups (store/links.py) on a real temp index: the links around a page
of documents, and the documents link targets may name; search/related.py picks among them
(tests/search/test_related.py)."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note
from tsm.models import Link
from tsm.store import links
from tsm.store.links import LinkRow, NamedDocument


def test_links_around_a_page_are_its_own_and_those_keyed_to_it(db: sqlite3.Connection) -> None:
    a = add_note(db, "notes/a.md", ["x"], links=[Link("Shell", "wikilink")])
    b = add_note(db, "deep/b.md", ["x"], links=[Link("../notes/shell.md", "markdown")])
    c = add_note(db, "c.md", ["x"], links=[Link("git", "wikilink")])
    found = sorted(links.links_around(db, [c], ["shell", "nothing"]))
    assert found == sorted(
        [
            LinkRow(True, c, "c.md", "git", "wikilink"),
            LinkRow(False, a, "notes/a.md", "Shell", "wikilink"),
            LinkRow(False, b, "deep/b.md", "../notes/shell.md", "markdown"),
        ]
    )
    assert links.links_around(db, [9999], []) == []


def test_documents_for_targets_by_path_with_suffixes_and_by_name(db: sqlite3.Connection) -> None:
    md = add_note(db, "notes/git.md", ["x"])
    plain = add_note(db, "notes/list.txt", ["x"])
    titled = add_note(db, "b.md", ["x"], title="Shell", aliases=["sh"])
    found = set(links.documents_for_targets(db, ["notes/git", "notes/list.txt", "git"], ["shell"]))
    assert found == {
        NamedDocument("notes/git.md", "file", md, "notes/git.md", True),
        NamedDocument("notes/list.txt", "file", plain, "notes/list.txt", True),
        NamedDocument("shell", "title", titled, "b.md", True),
    }
    assert links.documents_for_targets(db, [], []) == []
