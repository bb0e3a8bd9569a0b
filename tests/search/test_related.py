"""Related documents (search/related.py) on a real temp index: which document a link names
(a path with or without its suffix; a name by path, file name, title, then alias, then the
lowest id), backlinks, both ways, and nothing on the page itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.notes import add_note
from tsm.models import Link, Related
from tsm.search.related import MUTUAL, LinkedDocument, related_documents
from tsm.store.connect import open_db


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = open_db(tmp_path / "tsm.db", create=True)
    yield conn
    conn.close()


def page(db: sqlite3.Connection, *ids: int) -> dict[int, tuple[Related, ...]]:
    docs = [
        LinkedDocument(i, str(path), str(title), ())
        for i, path, title in db.execute(
            f"SELECT id, path, title FROM documents WHERE id IN ({','.join('?' * len(ids))})",
            ids,
        )
    ]
    return related_documents(db, docs)


def test_a_markdown_link_names_the_path_with_or_without_its_suffix(db: sqlite3.Connection) -> None:
    source = add_note(
        db,
        "notes/a.md",
        ["x"],
        links=[Link("git", "markdown"), Link("../list.txt", "markdown"), Link("gone", "markdown")],
    )
    add_note(db, "notes/git.md", ["x"])
    add_note(db, "list.txt", ["x"])
    assert page(db, source)[source] == (
        Related("list.txt", "markdown", 1.0),
        Related("notes/git.md", "markdown", 1.0),
    )


def test_a_wikilink_prefers_path_then_file_name_title_alias(db: sqlite3.Connection) -> None:
    source = add_note(db, "s.md", ["x"], links=[Link("shell", "wikilink"), Link("b", "wikilink")])
    add_note(db, "a.md", ["x"], title="A", aliases=["shell"])
    add_note(db, "b.md", ["x"], title="Shell")
    add_note(db, "deep/shell.md", ["x"], title="C")
    assert {r.path for r in page(db, source)[source]} == {"deep/shell.md", "b.md"}


def test_a_title_beats_an_older_alias_and_two_titles_go_to_the_lowest_id(
    db: sqlite3.Connection,
) -> None:
    source = add_note(db, "s.md", ["x"], links=[Link("kokoro", "wikilink")])
    add_note(db, "p.md", ["x"], title="P", aliases=["kokoro"])
    add_note(db, "z.md", ["x"], title="Kokoro")
    add_note(db, "x.md", ["x"], title="Kokoro")
    assert page(db, source)[source] == (Related("z.md", "wikilink", 1.0),)


def test_backlinks_both_ways_and_nothing_on_the_page(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["x"], links=[Link("b", "wikilink")])
    b = add_note(db, "b.md", ["x"], links=[Link("a", "wikilink")])
    add_note(db, "c.md", ["x"], links=[Link("b.md", "markdown")])
    assert page(db, b)[b] == (
        Related("a.md", "wikilink", MUTUAL),
        Related("c.md", "backlink", 0.7),
    )
    both = page(db, a, b)
    assert both[a] == () and both[b] == (Related("c.md", "backlink", 0.7),)
