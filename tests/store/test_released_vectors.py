"""The sweep of vectors no chunk uses (vectors.drop_orphans), on both engines: it looks only
at the hashes chunks let go of (`released_hashes`, migration m012), drops a vector once no
chunk of any document uses its text, keeps one that another chunk still uses, and on an
index migrated from schema 11 drops the vectors that were already unused."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from tests.store.notes import add_note, insert_vectors, pg_connect
from tsm.store import migrations, vectors
from tsm.store.connect import Transaction
from tsm.store.documents import delete_document

MODEL = "test-model"
BEFORE_RELEASED = 11  # the schema version before m012


def note(conn: Any, path: str, texts: list[str]) -> int:
    """A document of a chunk per text, each text its own hash (a text twice: one hash)."""
    return add_note(conn, path, texts, embed_hashes=texts)


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
    note(store, "a.md", ["shared", "a-only"])
    b = note(store, "b.md", ["shared", "b-only"])
    embed(store, ["shared", "a-only", "b-only"])
    assert sweep(store) == 0 and released(store) == 0  # every stored text is in use

    note(store, "a.md", ["a-new"])  # rewritten: "shared" and "a-only" let go
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
    note(store, "a.md", ["first"])
    note(store, "a.md", ["second"])  # "first" released while its vector was computed
    assert sweep(store) == 0
    embed(store, ["first", "second"])  # the late vector, and the one of the new text
    assert sweep(store) == 1
    assert stored(store) == {"second"}


def test_a_text_released_and_used_again_keeps_its_vector(store: Any) -> None:
    """A chunk moved from one note to another between two sweeps: its vector stays."""
    note(store, "a.md", ["moved", "stays"])
    embed(store, ["moved", "stays"])
    note(store, "a.md", ["stays"])
    note(store, "b.md", ["moved"])
    assert sweep(store) == 0 and stored(store) == {"moved", "stays"}


def check_migrated(conn: Any) -> None:
    assert migrations.apply(conn, up_to=BEFORE_RELEASED) == BEFORE_RELEASED
    note(conn, "a.md", ["used"])
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
