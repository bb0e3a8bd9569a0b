"""The entity lookups (store/entities.py) on a real temp index: tags by name with their
sizes, documents by tag and by title or alias, with a filter."""

from __future__ import annotations

import sqlite3

from tests.store.notes import add_note
from tsm.store import entities
from tsm.store.catalog import TagCount


def test_tags_under_a_name_are_the_tag_and_its_nested_tags(db: sqlite3.Connection) -> None:
    add_note(db, "a.md", ["x"], tags=["book", "book/novel"])
    add_note(db, "b.md", ["x"], tags=["book/novel/soseki", "book-club", "book.old"])
    add_note(db, "c.md", ["x"], tags=["books", "book"])
    assert entities.tags_under(db, "book") == [
        TagCount("book", 2),
        TagCount("book/novel", 1),
        TagCount("book/novel/soseki", 1),
    ]  # not book-club, book.old or books, though the range scan reads the first two
    assert entities.tags_under(db, "book/novel") == [
        TagCount("book/novel", 1),
        TagCount("book/novel/soseki", 1),
    ]
    assert entities.tags_under(db, "boo") == []
    assert entities.tags_under(db, "漱石") == []


def test_documents_tagged_exactly_and_filtered(db: sqlite3.Connection) -> None:
    a = add_note(db, "keep/a.md", ["x", "y"], tags=["book"])
    b = add_note(db, "drop/b.md", ["x"], tags=["book"])
    add_note(db, "keep/c.md", ["x"], tags=["book/novel"])
    assert sorted(entities.documents_tagged(db, "book", "1", ())) == sorted([a, b])
    assert entities.documents_tagged(db, "book", "d.path LIKE ?", ("keep/%",)) == [a]
    # the filter sees the document's first chunk as `c`, once per document
    assert sorted(entities.documents_tagged(db, "book", "c.text = ?", ("x",))) == sorted([a, b])
    assert entities.documents_tagged(db, "book", "c.text = ?", ("y",)) == []


def test_documents_named_by_title_or_alias_once(db: sqlite3.Connection) -> None:
    a = add_note(db, "notes/soseki.md", ["x"], title="Natsume Soseki", aliases=["漱石"])
    b = add_note(db, "drop/kokoro.md", ["x"], title="漱石", aliases=["漱石"])
    add_note(db, "notes/漱石.md", ["x"], title="Another")  # named by its file name only
    assert sorted(entities.documents_named(db, "漱石", "1", ())) == sorted([a, b])
    assert entities.documents_named(db, "natsume soseki", "1", ()) == [a]
    assert entities.documents_named(db, "漱石", "d.path LIKE ?", ("notes/%",)) == [a]
    assert entities.documents_named(db, "another title", "1", ()) == []
