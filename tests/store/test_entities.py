"""The entity lookup (store/entities.py) on a real temp index: tags under the query's names
with their sizes, the documents carrying them and those a title or alias names, each with its
first chunk, through a filter; search/entities.py ranks them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg
from tests.store.notes import add_note, chunk_ids
from tsm.store import entities, migrations
from tsm.store.connect import open_db
from tsm.store.entities import EntityRow
from tsm.store.postgres import connection as postgres


@pytest.fixture
def db(tmp_path: Path, stores: pg.Stores) -> Iterator[Any]:
    """An empty index in the store under test (TSM_TEST_STORE): the lookup's SQL differs
    between the engines."""
    if stores.server is None:
        conn = open_db(tmp_path / "tsm.db", create=True)
        yield conn
        conn.close()
        return
    with pg.fresh_database(stores.server) as url:
        server = postgres.connect(url)
        migrations.apply(server)
        yield server
        server.close()


def rows(db: sqlite3.Connection, names: list[str], whole: str, where: str = "1 = 1", params=()):  # type: ignore[no-untyped-def]
    return sorted(
        entities.entity_rows(db, names, whole, 20, where, params),
        key=lambda r: (str(r.tag), r.document_id),
    )


def test_tags_under_a_name_with_their_sizes_and_first_chunks(db: sqlite3.Connection) -> None:
    a = add_note(db, "a.md", ["x", "y"], tags=["book", "book/novel"])
    b = add_note(db, "b.md", ["x"], tags=["book-club", "book.old"])
    c = add_note(db, "c.md", ["x"], tags=["books", "book"])
    first = {d: chunk_ids(db, d)[0] for d in (a, b, c)}
    found = [r for r in rows(db, ["book"], "nothing") if r.tag in ("book", "book/novel")]
    assert found == [
        EntityRow("book", "book", 2, a, first[a]),
        EntityRow("book", "book", 2, c, first[c]),
        EntityRow("book", "book/novel", 1, a, first[a]),
    ]  # the range also holds book-club and book.old: the caller drops them
    assert rows(db, ["boo"], "nothing") == [] and rows(db, ["漱石"], "nothing") == []


def test_tags_on_too_many_documents_and_the_filter_drop_rows(db: sqlite3.Connection) -> None:
    a = add_note(db, "keep/a.md", ["x", "y"], tags=["book"])
    add_note(db, "drop/b.md", ["x"], tags=["book"])
    assert [r.document_id for r in rows(db, ["book"], "-", "d.path LIKE ?", ("keep/%",))] == [a]
    # the filter sees the document's first chunk as `c`
    assert len(rows(db, ["book"], "-", "c.text = ?", ("x",))) == 2
    assert rows(db, ["book"], "-", "c.text = ?", ("y",)) == []
    many = entities.entity_rows(db, ["book"], "-", 1, "1 = 1", ())
    assert many == []  # a tag on more documents than allowed is a topic


def test_documents_named_by_title_or_alias_once(db: sqlite3.Connection) -> None:
    a = add_note(db, "notes/soseki.md", ["x"], title="Natsume Soseki", aliases=["漱石"])
    b = add_note(db, "drop/kokoro.md", ["x"], title="漱石", aliases=["漱石"])
    add_note(db, "notes/漱石.md", ["x"], title="Another")  # named by its file name only
    assert sorted(r.document_id for r in rows(db, [], "漱石")) == sorted([a, b])
    assert [r.document_id for r in rows(db, [], "natsume soseki")] == [a]
    assert [r.document_id for r in rows(db, [], "漱石", "d.path LIKE ?", ("notes/%",))] == [a]
    assert rows(db, [], "another title") == []
