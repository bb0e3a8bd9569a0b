"""The store functions behind `tsm doctor` and `tsm rebuild`: the health of the DB, vector
coverage, session paths, reusing vectors from an attached old index, and leaving WAL mode.
Each runs on a real temp index."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tsm.errors import StorageFailure
from tsm.models import Chunk, Document, Section
from tsm.store import catalog, documents, migrations, vectors
from tsm.store.connect import Transaction, attached, leave_wal, open_db, release_wal


def add(conn: sqlite3.Connection, path: str, bodies: list[str], type_: str = "markdown") -> int:
    """One document with a chunk per body; each chunk's embed_hash is its body."""
    doc = Document(
        path=path,
        type=type_,
        title=path,
        text="\n".join(bodies),
        sections=tuple(Section("", b) for b in bodies),
    )
    rows = [documents.ChunkRow(Chunk(i, "", b), "", "", b, b) for i, b in enumerate(bodies)]
    with Transaction(conn):
        return documents.write_document(
            conn, doc, rows, content_hash=path, size=1, mtime=0.0, category="", fts_tags=""
        )


def embed(conn: sqlite3.Connection, model: str, hashes: list[str]) -> None:
    with Transaction(conn):
        vectors.store(conn, model, [(h, np.full(4, len(h), np.float32)) for h in hashes])


def new_db(path: Path) -> sqlite3.Connection:
    return open_db(path, create=True)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = new_db(tmp_path / "tsm.db")
    yield conn
    conn.close()


# -- catalog.index_health -------------------------------------------------------------------


def test_index_health_of_a_sound_index(db: sqlite3.Connection) -> None:
    add(db, "a.md", ["one", "two"])
    add(db, "b.md", ["three"])
    health = catalog.index_health(db)
    assert health == catalog.IndexHealth(("ok",), migrations.LATEST, 2, 3)
    assert health.sound


def test_index_health_reports_what_quick_check_finds(tmp_path: Path) -> None:
    """A NULL in a NOT NULL column (here written behind SQLite's back) is one of the things
    quick_check reports: each finding is a line, and the index is not sound."""
    path = tmp_path / "tsm.db"
    conn = new_db(path)
    add(conn, "a.md", ["one"])
    conn.execute("CREATE TABLE extra(a)")
    conn.execute("INSERT INTO extra VALUES (NULL)")
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE TABLE extra(a NOT NULL)' WHERE name='extra'"
    )
    conn.close()
    conn = sqlite3.connect(path)
    try:
        health = catalog.index_health(conn)
    finally:
        conn.close()
    assert not health.sound
    assert any("NULL value in extra.a" in line for line in health.quick_check), health
    assert (health.documents, health.chunks) == (1, 1)


# -- vectors.vector_coverage ----------------------------------------------------------------


def test_vector_coverage_counts_missing_chunks_and_other_models(db: sqlite3.Connection) -> None:
    add(db, "a.md", ["one", "two", "three"])
    add(db, "b.md", ["one"])  # the same text as a.md's first chunk: one vector serves both
    embed(db, "m1", ["one", "two"])
    embed(db, "m2", ["one", "two", "three"])
    assert vectors.vector_coverage(db, "m1") == vectors.VectorCoverage(4, 1, 3)
    assert vectors.vector_coverage(db, "m2") == vectors.VectorCoverage(4, 0, 2)
    assert vectors.vector_coverage(db, "m3") == vectors.VectorCoverage(4, 4, 5)
    # no model known: every chunk is missing one, every vector is another model's
    assert vectors.vector_coverage(db, None) == vectors.VectorCoverage(4, 4, 5)


def test_vector_coverage_of_an_empty_index(db: sqlite3.Connection) -> None:
    assert vectors.vector_coverage(db, "m1") == vectors.VectorCoverage(0, 0, 0)


# -- documents.session_paths ----------------------------------------------------------------


def test_session_paths_are_the_transcripts_sorted(db: sqlite3.Connection) -> None:
    add(db, "~/b.jsonl", ["hello"], "session")
    add(db, "notes/a.md", ["a note"])
    add(db, "/abs/a.jsonl", ["hi"], "session")
    add(db, "sessions/c.jsonl", ["hey"], "session")
    assert documents.session_paths(db) == ["/abs/a.jsonl", "sessions/c.jsonl", "~/b.jsonl"]


def test_session_paths_of_an_index_without_any(db: sqlite3.Connection) -> None:
    add(db, "notes/a.md", ["a note"])
    assert documents.session_paths(db) == []


# -- connect.attached and vectors.copy_reusable --------------------------------------------


def attached_names(conn: sqlite3.Connection) -> list[str]:
    return [row[1] for row in conn.execute("PRAGMA database_list")]


def test_attached_detaches_afterwards_even_on_an_error(db: sqlite3.Connection, tmp_path: Path):
    other = new_db(tmp_path / "other.db")
    add(other, "x.md", ["x"])
    other.close()
    with attached(db, tmp_path / "other.db") as schema:
        assert schema == "old" and attached_names(db) == ["main", "old"]
        assert db.execute("SELECT path FROM old.documents").fetchall() == [("x.md",)]
    assert attached_names(db) == ["main"]
    with pytest.raises(ZeroDivisionError), attached(db, tmp_path / "other.db", "prev"):
        assert attached_names(db) == ["main", "prev"]
        raise ZeroDivisionError
    assert attached_names(db) == ["main"]


def test_copy_reusable_copies_the_vectors_of_text_still_present(tmp_path: Path) -> None:
    old = new_db(tmp_path / "old.db")
    add(old, "a.md", ["kept", "edited before"])
    embed(old, "m1", ["kept", "edited before"])
    embed(old, "m2", ["kept"])
    vectors.set_meta(old, "model_name", "m1")
    vectors.set_meta(old, "embedding_dim", "4")
    old.close()
    new = new_db(tmp_path / "new.db")
    add(new, "a.md", ["kept", "edited after"])
    with attached(new, tmp_path / "old.db") as schema, Transaction(new):
        copied = vectors.copy_reusable(new, schema)
    # the number of vectors copied: not the change log's rows (written by trigger) nor meta
    assert copied == 2
    rows = new.execute("SELECT model, embed_hash, vector FROM embeddings ORDER BY model")
    assert [(m, h, np.frombuffer(v, np.float32)[0]) for m, h, v in rows] == [
        ("m1", "kept", 4.0),
        ("m2", "kept", 4.0),
    ]
    assert (vectors.get_meta(new, "model_name"), vectors.get_meta(new, "embedding_dim")) == (
        "m1",
        "4",
    )
    assert vectors.count_missing(new, "m1") == 1  # "edited after" is embedded afterwards
    new.close()


def test_copy_reusable_keeps_the_new_index_meta_and_vectors(tmp_path: Path) -> None:
    old = new_db(tmp_path / "old.db")
    add(old, "a.md", ["same"])
    with Transaction(old):
        vectors.store(old, "m1", [("same", np.zeros(4, np.float32))])
    vectors.set_meta(old, "model_name", "m1")
    old.close()
    new = new_db(tmp_path / "new.db")
    add(new, "a.md", ["same"])
    embed(new, "m1", ["same"])  # already embedded here: the old vector is not copied over it
    vectors.set_meta(new, "model_name", "m9")
    with attached(new, tmp_path / "old.db") as schema, Transaction(new):
        assert vectors.copy_reusable(new, schema) == 0
    (vector,) = new.execute("SELECT vector FROM embeddings").fetchone()
    assert np.frombuffer(vector, np.float32)[0] == 4.0
    assert vectors.get_meta(new, "model_name") == "m9"
    new.close()


# -- connect.leave_wal and release_wal ------------------------------------------------------


def journal_mode(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def test_leave_wal_folds_the_wal_into_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tsm.db"
    conn = new_db(path)
    add(conn, "a.md", ["one"])
    assert Path(f"{path}-wal").exists()
    leave_wal(conn)
    conn.close()
    assert not Path(f"{path}-wal").exists()
    assert journal_mode(path) == "delete"
    conn = open_db(path)  # and tsm's own open brings WAL back, with the rows
    assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 1
    conn.close()
    assert journal_mode(path) == "wal"


def test_release_wal_refuses_while_another_connection_has_the_file_open(tmp_path: Path):
    path = tmp_path / "tsm.db"
    conn = new_db(path)
    add(conn, "a.md", ["one"])
    with pytest.raises(StorageFailure) as raised:
        release_wal(path, "close it and try again")
    assert raised.value.message.startswith(f"another process has the index at {path} open")
    assert raised.value.hint == "close it and try again"
    conn.close()
    release_wal(path, "close it and try again")
    assert journal_mode(path) == "delete" and not Path(f"{path}-wal").exists()


def test_release_wal_leaves_a_file_that_is_no_database_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "tsm.db"
    path.write_bytes(b"\x00garbage\xff" * 500)
    release_wal(path, "unused")
    assert path.read_bytes() == b"\x00garbage\xff" * 500
