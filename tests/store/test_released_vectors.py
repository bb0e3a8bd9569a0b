"""The sweep of vectors no chunk uses (vectors.drop_orphans), on both engines: it looks only
at the hashes chunks let go of (`released_hashes`, migration m012), drops a vector once no
chunk of any document uses its text, keeps one that another chunk still uses, and on an
index migrated from schema 11 drops the vectors that were already unused."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.store.notes import insert_vectors, pg_connect
from tsm.models import Chunk, Document, Section
from tsm.store import migrations, vectors
from tsm.store.connect import Transaction, open_db
from tsm.store.documents import ChunkRow, delete_document, lock_paths, write_document

MODEL = "test-model"
BEFORE_RELEASED = 11  # the schema version before m012


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        conn: Any = open_db(tmp_path / "tsm.db", create=True)
    else:
        conn = pg_connect(request.getfixturevalue("pg_url"))
    yield conn
    conn.close()


def write(conn: Any, path: str, hashes: list[str]) -> int:
    """A document whose chunks' texts have these hashes (a hash twice: the same text)."""
    doc = Document(
        path=path,
        type="markdown",
        title=path,
        text="\n".join(hashes),
        sections=tuple(Section("", h) for h in hashes),
    )
    rows = [ChunkRow(Chunk(i, "", h, line=i + 1), path, "", h, h) for i, h in enumerate(hashes)]
    with Transaction(conn):
        lock_paths(conn, [path])
        return write_document(
            conn, doc, rows, content_hash=path, size=1, mtime=0.0, category="note", fts_tags=""
        )


def embed(conn: Any, hashes: list[str]) -> None:
    with Transaction(conn):
        vectors.store(conn, MODEL, [(h, np.ones(4, dtype=np.float32)) for h in hashes])


def stored(conn: Any) -> set[str]:
    return {r[0] for r in conn.execute("SELECT embed_hash FROM embeddings")}


def released(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM released_hashes").fetchone()[0])


def sweep(conn: Any) -> int:
    with Transaction(conn):
        return vectors.drop_orphans(conn)


def test_a_vector_goes_with_the_last_chunk_that_uses_its_text(store: Any) -> None:
    write(store, "a.md", ["shared", "a-only"])
    b = write(store, "b.md", ["shared", "b-only"])
    embed(store, ["shared", "a-only", "b-only"])
    assert sweep(store) == 0 and released(store) == 0  # every stored text is in use

    write(store, "a.md", ["a-new"])  # a's chunks rewritten: "shared" and "a-only" let go
    assert released(store) >= 2
    assert sweep(store) == 1
    assert stored(store) == {"shared", "b-only"}  # b still uses "shared"
    assert released(store) == 0

    with Transaction(store):
        delete_document(store, b)
    assert sweep(store) == 2
    assert stored(store) == set()
    assert sweep(store) == 0


def test_a_vector_stored_after_its_text_was_swept_is_swept_in_turn(store: Any) -> None:
    """An embedding run reads a chunk's text, the note is edited and the edit's release is
    swept, then the run stores the vector: the next sweep still drops it."""
    write(store, "a.md", ["first"])
    write(store, "a.md", ["second"])  # "first" released while its vector was computed
    assert sweep(store) == 0
    embed(store, ["first", "second"])  # the late vector, and the one of the new text
    assert sweep(store) == 1
    assert stored(store) == {"second"}


def test_a_text_released_and_used_again_keeps_its_vector(store: Any) -> None:
    """A chunk moved from one note to another between two sweeps: its vector stays."""
    write(store, "a.md", ["moved", "stays"])
    embed(store, ["moved", "stays"])
    write(store, "a.md", ["stays"])
    write(store, "b.md", ["moved"])
    assert sweep(store) == 0 and stored(store) == {"moved", "stays"}


def check_migrated(conn: Any) -> None:
    assert migrations.apply(conn, up_to=BEFORE_RELEASED) == BEFORE_RELEASED
    write(conn, "a.md", ["used"])
    vector = np.ones(4, dtype=np.float32)
    with Transaction(conn):  # "unused": a vector whose text no chunk has
        insert_vectors(conn, MODEL, [("used", vector), ("unused", vector)])
    assert migrations.apply(conn) == migrations.LATEST
    assert sweep(conn) == 1
    assert stored(conn) == {"used"}


def test_an_sqlite_index_of_schema_11_loses_the_vectors_no_chunk_used(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "tsm.db", isolation_level=None)
    try:
        check_migrated(conn)
    finally:
        conn.close()


def test_a_postgresql_store_of_schema_11_loses_the_vectors_no_chunk_used(pg_url: str) -> None:
    conn = pg_connect(pg_url, up_to=0)
    try:
        check_migrated(conn)
    finally:
        conn.close()
