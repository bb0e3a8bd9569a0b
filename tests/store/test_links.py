"""The link graph's lookups (store/links.py) on a real temp index: the document a Markdown
link or a wikilink names, a document's links and the links that may point back at it."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note
from tsm.models import Link
from tsm.store import links
from tsm.store.catalog import DocumentLink
from tsm.store.links import Backlink, DocumentPath


def test_document_at_path_with_or_without_the_suffix(db: sqlite3.Connection) -> None:
    md = add_note(db, "notes/git.md", ["x"])
    long = add_note(db, "notes/shell.markdown", ["x"])
    plain = add_note(db, "notes/list.txt", ["x"])
    assert links.document_at_path(db, "notes/git") == DocumentPath(md, "notes/git.md")
    assert links.document_at_path(db, "notes/git.md") == DocumentPath(md, "notes/git.md")
    assert links.document_at_path(db, "notes/shell") == (long, "notes/shell.markdown")
    assert links.document_at_path(db, "notes/list.txt") == (plain, "notes/list.txt")
    assert links.document_at_path(db, "notes/list") is None
    assert links.document_at_path(db, "git") is None  # a path, not a file name


def test_document_named_prefers_path_then_file_name_title_alias(db: sqlite3.Connection) -> None:
    by_alias = add_note(db, "a.md", ["x"], title="A", aliases=["shell"])
    by_title = add_note(db, "b.md", ["x"], title="Shell")
    by_stem = add_note(db, "deep/shell.md", ["x"], title="C")
    assert links.document_named(db, "shell", "shell") == (by_stem, "deep/shell.md")
    assert links.document_named(db, "deep/shell", "shell") == (by_stem, "deep/shell.md")
    assert links.document_named(db, "b", "b") == (by_title, "b.md")  # its file name
    assert links.document_named(db, "nothing", "shell") == (by_stem, "deep/shell.md")
    assert links.document_named(db, "nothing", "none") is None
    older_alias = add_note(db, "p.md", ["x"], title="P", aliases=["kokoro"])
    titled = add_note(db, "z.md", ["x"], title="Kokoro")
    assert older_alias < titled
    assert links.document_named(db, "kokoro", "kokoro") == (titled, "z.md")  # a title wins
    add_note(db, "x.md", ["x"], title="Kokoro")  # two titles: the lowest id
    assert links.document_named(db, "kokoro", "kokoro") == (titled, "z.md")
    assert by_alias < by_title < by_stem  # the file name won above though newest


def test_links_from_a_document_as_written(db: sqlite3.Connection) -> None:
    written = [Link("Shell", "wikilink"), Link("../git.md", "markdown")]
    a = add_note(db, "notes/a.md", ["x"], links=written)
    add_note(db, "notes/b.md", ["x"], links=[Link("elsewhere", "wikilink")])
    assert sorted(links.links_from(db, a), key=lambda link: link.target) == [
        DocumentLink("../git.md", "markdown"),
        DocumentLink("Shell", "wikilink"),
    ]
    assert links.links_from(db, 9999) == []


def test_links_with_keys_name_their_source(db: sqlite3.Connection) -> None:
    a = add_note(db, "notes/a.md", ["x"], links=[Link("Shell", "wikilink")])
    b = add_note(db, "deep/b.md", ["x"], links=[Link("../notes/shell.md", "markdown")])
    c = add_note(db, "c.md", ["x"], links=[Link("git", "wikilink")])
    found = sorted(links.links_with_keys(db, ["shell", "nothing"]))
    assert found == sorted(
        [
            Backlink(a, "notes/a.md", "Shell", "wikilink"),
            Backlink(b, "deep/b.md", "../notes/shell.md", "markdown"),
        ]
    )
    assert links.links_with_keys(db, ["git"]) == [Backlink(c, "c.md", "git", "wikilink")]
