"""The SQLite store: opening, corruption, migrations, WAL, documents with their FTS rows kept in
step, and vectors round-tripped with FakeEmbedder."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.store.notes import embed_pending
from tsm.embed.fake import FakeEmbedder
from tsm.errors import IndexCorrupt, UserError
from tsm.models import Chunk, Document, Link, Section
from tsm.search.vector import VectorIndex
from tsm.store import migrations, vectors
from tsm.store.connect import Transaction, open_db
from tsm.store.documents import (
    ChunkRow,
    delete_document,
    find_by_hash,
    stored_file,
    stored_files,
    touch,
    write_document,
)
from tsm.store.sqlite import schema as sqlite_schema
from tsm.store.sqlite import vectors as sqlite_vectors


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "tsm.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[sqlite3.Connection]:
    conn = open_db(db_path, create=True)
    yield conn
    conn.close()


def make_doc(
    path: str,
    bodies: list[str],
    *,
    tags: tuple[str, ...] = ("t",),
    links: tuple[Link, ...] = (),
    hashes: list[str] | None = None,
) -> tuple[Document, list[ChunkRow]]:
    doc = Document(
        path=path,
        type="markdown",
        title=f"Title of {path}",
        text="\n\n".join(bodies),
        sections=tuple(Section("H", b) for b in bodies),
        tags=tags,
        links=links,
        aliases=("alias",),
        status="draft",
        created="2024-01-01",
        updated="2024-02-01",
        date="2024-02-01",
        date_source="frontmatter:updated",
    )
    keys = hashes or [f"{path}#{i}:{b}" for i, b in enumerate(bodies)]
    rows = [
        ChunkRow(
            Chunk(i, "H", b, line=1),
            fts_title=doc.title,
            fts_section="h",
            fts_body=b,
            embed_hash=keys[i],
        )
        for i, b in enumerate(bodies)
    ]
    return doc, rows


def add(conn: sqlite3.Connection, path: str, bodies: list[str], **kw: object) -> int:
    doc, rows = make_doc(path, bodies, **kw)  # type: ignore[arg-type]
    with Transaction(conn):
        return write_document(
            conn,
            doc,
            rows,
            content_hash=f"hash:{path}:{len(bodies)}",
            size=10,
            mtime=1.5,
            category="note",
            fts_tags="t",
        )


def count(conn: sqlite3.Connection, sql: str, *params: object) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def assert_fts_in_step(conn: sqlite3.Connection) -> None:
    total = count(conn, "SELECT COUNT(*) FROM chunks")
    assert count(conn, "SELECT COUNT(*) FROM chunks_fts") == total
    assert (
        count(conn, "SELECT COUNT(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)")
        == 0
    )
    assert (
        count(conn, "SELECT COUNT(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunks_fts)")
        == 0
    )


def fts_ids(conn: sqlite3.Connection, word: str) -> set[int]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',)
        )
    }


# --- opening ---------------------------------------------------------------------------------


def test_missing_db_without_create_is_a_user_error(db_path: Path) -> None:
    with pytest.raises(UserError) as info:
        open_db(db_path)
    assert str(db_path) in info.value.message
    assert info.value.hint and "tsm index" in info.value.hint
    assert not db_path.exists()
    assert not db_path.parent.exists()


def test_create_makes_parent_dirs(db_path: Path) -> None:
    conn = open_db(db_path, create=True)
    conn.close()
    assert db_path.is_file()
    open_db(db_path).close()  # now it exists: create not needed


@pytest.mark.parametrize("garbage", [b"garbage bytes " * 100, b"\x00\xff" * 4096])
def test_corrupt_file_is_index_corrupt(db_path: Path, garbage: bytes) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(garbage)
    with pytest.raises(IndexCorrupt) as info:
        open_db(db_path)
    assert info.value.exit_code == 2
    assert str(db_path) in info.value.message
    assert info.value.hint and "rebuild" in info.value.hint
    assert db_path.read_bytes() == garbage  # never overwritten


def test_corrupt_header_of_a_real_index(db_path: Path) -> None:
    open_db(db_path, create=True).close()
    data = bytearray(db_path.read_bytes())
    data[:16] = b"not sqlite at al"
    db_path.write_bytes(bytes(data))
    with pytest.raises(IndexCorrupt):
        open_db(db_path)


def test_directory_in_place_of_db_is_index_corrupt(db_path: Path) -> None:
    db_path.mkdir(parents=True)
    with pytest.raises(IndexCorrupt):
        open_db(db_path)


def test_wal_mode_and_foreign_keys(db: sqlite3.Connection) -> None:
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


# --- migrations ------------------------------------------------------------------------------


def test_schema_version_is_number_of_migrations(db: sqlite3.Connection) -> None:
    assert migrations.schema_version(db) == len(migrations.MIGRATIONS) == migrations.LATEST
    rows = db.execute("SELECT version, name FROM migrations ORDER BY version").fetchall()
    assert rows == [(i, m.__name__) for i, m in enumerate(migrations.MIGRATIONS, start=1)]
    assert [name for _, name in rows][0] == "m001_documents_chunks_fts"


def test_the_sqlite_schema_writes_every_migration_in_order() -> None:
    """provenance.py builds the schema it trusts from the SQLite steps: they must be the
    migrations' own, in their order (the PostgreSQL schema's are checked by mypy)."""
    assert [s.__name__ for s in sqlite_schema.STEPS] == [m.__name__ for m in migrations.MIGRATIONS]


def test_migrations_are_idempotent(db_path: Path) -> None:
    open_db(db_path, create=True).close()
    conn = open_db(db_path)
    add(conn, "a.md", ["deer"])
    assert migrations.apply(conn) == len(migrations.MIGRATIONS)
    conn.close()
    conn = open_db(db_path)
    assert migrations.schema_version(conn) == len(migrations.MIGRATIONS)
    assert count(conn, "SELECT COUNT(*) FROM migrations") == len(migrations.MIGRATIONS)
    assert count(conn, "SELECT COUNT(*) FROM documents") == 1
    conn.close()


def test_migrations_from_version_one_backfill_names(tmp_path: Path) -> None:
    """An index made by m001 alone gets the names and link keys of m002 for existing rows."""
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    conn.execute("BEGIN")
    migrations.MIGRATIONS[0](conn)
    conn.execute("INSERT INTO migrations VALUES (1, 'm001_documents_chunks_fts', 0)")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("COMMIT")
    conn.execute("""INSERT INTO documents(path, type, title, content_hash, size, mtime, category,
                    aliases, text, indexed_at) VALUES ('notes/My Note.md', 'markdown', 'Title',
                    'h', 1, 0, 'note', '["Alias"]', 'x', 0)""")
    conn.execute(
        "INSERT INTO links(document_id, target, link_type) VALUES (1, 'Other', 'wikilink')"
    )
    assert migrations.apply(conn) == len(migrations.MIGRATIONS)
    names = set(conn.execute("SELECT name, kind FROM names").fetchall())
    assert {("my note", "stem"), ("title", "title"), ("alias", "alias")} <= names
    assert conn.execute("SELECT target_key FROM links").fetchone()[0] == "other"
    conn.close()


# --- documents -------------------------------------------------------------------------------


def test_write_document_stores_everything(db: sqlite3.Connection) -> None:
    links = (Link("Other", "wikilink"), Link("sub/x.md", "markdown"))
    doc_id = add(
        db, "notes/a.md", ["deer trap", "licence exam"], tags=("hunting", "狩猟"), links=links
    )
    row = db.execute(
        "SELECT path, type, title, status, created, updated, doc_date, date_source,"
        " aliases, category FROM documents WHERE id = ?",
        (doc_id,),
    ).fetchone()
    assert row == (
        "notes/a.md",
        "markdown",
        "Title of notes/a.md",
        "draft",
        "2024-01-01",
        "2024-02-01",
        "2024-02-01",
        "frontmatter:updated",
        '["alias"]',
        "note",
    )
    chunks = db.execute(
        "SELECT chunk_index, section, text FROM chunks WHERE document_id = ? ORDER BY chunk_index",
        (doc_id,),
    ).fetchall()
    assert chunks == [(0, "H", "deer trap"), (1, "H", "licence exam")]
    assert {t for (t,) in db.execute("SELECT tag FROM tags")} == {"hunting", "狩猟"}
    assert db.execute(
        "SELECT target, link_type, target_key FROM links ORDER BY rowid"
    ).fetchall() == [("Other", "wikilink", "other"), ("sub/x.md", "markdown", "x")]
    assert len(fts_ids(db, "deer")) == 1
    assert_fts_in_step(db)


def test_stored_file_lookups(db: sqlite3.Connection) -> None:
    doc_id = add(db, "a.md", ["x"])
    stored = stored_file(db, "a.md")
    assert stored is not None
    assert (stored.id, stored.size, stored.mtime) == (doc_id, 10, 1.5)
    assert stored_file(db, "missing.md") is None
    assert list(stored_files(db)) == ["a.md"]
    assert [f.path for f in find_by_hash(db, stored.content_hash)] == ["a.md"]
    touch(db, doc_id, 99, 7.0)
    assert stored_file(db, "a.md") == type(stored)(doc_id, "a.md", 99, 7.0, stored.content_hash)


def test_rewrite_replaces_chunks_and_fts_rows(db: sqlite3.Connection) -> None:
    add(db, "a.md", ["old words here", "more old text", "third"])
    add(db, "b.md", ["neighbour text"])
    add(db, "a.md", ["new words"])
    assert count(db, "SELECT COUNT(*) FROM documents") == 2
    assert fts_ids(db, "old") == set()
    assert len(fts_ids(db, "new")) == 1
    assert len(fts_ids(db, "neighbour")) == 1
    assert_fts_in_step(db)


def test_delete_document_removes_chunks_fts_and_children(db: sqlite3.Connection) -> None:
    a = add(db, "a.md", ["deer one", "deer two"], links=(Link("b", "wikilink"),))
    add(db, "b.md", ["deer three"])
    with Transaction(db):
        delete_document(db, a)
    assert_fts_in_step(db)
    assert len(fts_ids(db, "deer")) == 1
    for table in ("chunks", "tags", "links", "names"):
        assert count(db, f"SELECT COUNT(*) FROM {table} WHERE document_id = ?", a) == 0


def test_failed_transaction_leaves_previous_state(db: sqlite3.Connection) -> None:
    add(db, "a.md", ["original"])
    doc, rows = make_doc("a.md", ["replacement"])
    with pytest.raises(RuntimeError):
        with Transaction(db):
            write_document(
                db, doc, rows, content_hash="new", size=1, mtime=0.0, category="note", fts_tags=""
            )
            raise RuntimeError("crash mid-write")
    assert len(fts_ids(db, "original")) == 1
    assert fts_ids(db, "replacement") == set()
    assert_fts_in_step(db)


def test_many_writes_and_deletes_stay_in_step(db: sqlite3.Connection) -> None:
    ids = {}
    for round_ in range(3):
        for i in range(6):
            ids[i] = add(db, f"n{i}.md", [f"round{round_} body {j}" for j in range(i % 3 + 1)])
        for i in (1, 4):
            with Transaction(db):
                delete_document(db, ids[i])
        assert_fts_in_step(db)
    assert count(db, "SELECT COUNT(*) FROM documents") == 4


# --- vectors ---------------------------------------------------------------------------------


def test_pending_lists_distinct_texts(db: sqlite3.Connection) -> None:
    add(db, "a.md", ["deer trap", "same text"], hashes=["h-a0", "h-shared"])
    add(db, "b.md", ["same text"], hashes=["h-shared"])
    pending = vectors.pending(db, "fake-64")
    assert [p.embed_hash for p in pending] == ["h-a0", "h-shared"]
    assert pending[0].title == "Title of a.md"
    assert (pending[0].section, pending[0].text) == ("H", "deer trap")
    assert vectors.count_missing(db, "fake-64") == 3  # chunks, not distinct texts
    assert vectors.count_missing(db, None) == 3
    assert [p.embed_hash for p in vectors.pending(db, "fake-64", limit=1)] == ["h-a0"]


def test_pending_ids_read_in_batches_give_the_same_texts(db: sqlite3.Connection) -> None:
    """A long embedding run holds only ids; a batch's texts are read when it is embedded,
    and a chunk deleted in between is left out, not an error."""
    add(db, "a.md", ["deer trap", "same text"], hashes=["h-a0", "h-shared"])
    b = add(db, "b.md", ["same text", "LoRa module"], hashes=["h-shared", "h-b1"])
    ids = vectors.pending_ids(db, "fake-64")
    assert vectors.pending_texts(db, ids) == vectors.pending(db, "fake-64")
    with Transaction(db):
        delete_document(db, b)
    assert [p.embed_hash for p in vectors.pending_texts(db, ids)] == ["h-a0", "h-shared"]
    assert vectors.pending_texts(db, []) == []


def test_pending_texts_of_more_ids_than_one_in_list(db: sqlite3.Connection) -> None:
    """`embedding.batch_size` can be any number, a statement's parameters cannot (here a
    limit as low as PostgreSQL's is for its 65,535): the ids are read a list at a time."""
    db.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, vectors.IN_LIST_IDS + 10)
    count = 2 * vectors.IN_LIST_IDS + 1
    add(db, "many.md", [f"text {i}" for i in range(count)], hashes=[f"h{i}" for i in range(count)])
    ids = vectors.pending_ids(db, "fake-64")
    assert len(ids) == count
    assert vectors.pending_texts(db, list(reversed(ids))) == vectors.pending(db, "fake-64")


def test_vectors_round_trip(db: sqlite3.Connection) -> None:
    embedder = FakeEmbedder()
    a = add(db, "a.md", ["deer trap", "licence exam"])
    b = add(db, "b.md", ["LoRa module"])
    assert embed_pending(db, embedder) == 3
    assert vectors.pending(db, embedder.name) == []
    assert vectors.count_missing(db, embedder.name) == 0
    assert vectors.count_missing(db, "other-model") == 3

    chunk_ids, doc_ids, matrix = vectors.load_matrix(db, embedder.name)
    rows = db.execute("SELECT id, document_id, text FROM chunks ORDER BY id").fetchall()
    assert chunk_ids.tolist() == [r[0] for r in rows]
    assert doc_ids.tolist() == [a, a, b]
    assert matrix.dtype == np.float32
    assert matrix.shape == (3, embedder.dim)
    np.testing.assert_array_equal(matrix, embedder.embed_documents([r[2] for r in rows]))
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_shared_text_is_embedded_once(db: sqlite3.Connection) -> None:
    embedder = FakeEmbedder(dim=16)
    add(db, "a.md", ["same"], hashes=["h"])
    add(db, "b.md", ["same"], hashes=["h"])
    assert embed_pending(db, embedder) == 1
    assert count(db, "SELECT COUNT(*) FROM embeddings") == 1
    chunk_ids, doc_ids, matrix = vectors.load_matrix(db, embedder.name)
    assert len(chunk_ids) == 2 and matrix.shape == (2, 16)
    np.testing.assert_array_equal(matrix[0], matrix[1])


def test_drop_orphans_after_edit_and_delete(db: sqlite3.Connection) -> None:
    embedder = FakeEmbedder()
    a = add(db, "a.md", ["one", "two"])
    add(db, "b.md", ["three"])
    embed_pending(db, embedder)
    add(db, "b.md", ["three edited"])  # new text: new hash, old vector orphaned
    with Transaction(db):
        delete_document(db, a)
        assert vectors.drop_orphans(db) == 3
    assert vectors.count_missing(db, embedder.name) == 1
    assert embed_pending(db, embedder) == 1
    chunk_ids, _, matrix = vectors.load_matrix(db, embedder.name)
    assert len(chunk_ids) == 1
    np.testing.assert_array_equal(matrix[0], embedder.embed_query("three edited"))
    with Transaction(db):
        assert vectors.drop_orphans(db) == 0


def test_load_matrix_empty_and_other_model(db: sqlite3.Connection) -> None:
    chunk_ids, doc_ids, matrix = vectors.load_matrix(db, "fake-64")
    assert chunk_ids.shape == doc_ids.shape == (0,)
    assert matrix.shape == (0, 0)
    add(db, "a.md", ["deer"])
    embed_pending(db, FakeEmbedder(dim=8))
    assert vectors.load_matrix(db, "fake-64")[2].shape == (0, 0)
    assert vectors.load_matrix(db, "fake-8")[2].shape == (1, 8)


def test_changed_rows_are_looked_up_by_chunk_id(db: sqlite3.Connection) -> None:
    """A searcher patches its matrix with the rows of a few dozen changed chunks; a plan
    that scans every vector of the model instead took 0.9 s at 100k chunks."""
    embedder = FakeEmbedder(dim=8)
    add(db, "a.md", [f"chunk {i}" for i in range(60)])
    embed_pending(db, embedder)
    ids = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id")][10:50]
    plan = [
        row[3]
        for row in db.execute(
            "EXPLAIN QUERY PLAN " + sqlite_vectors.changed_rows_sql(len(ids)), (embedder.name, *ids)
        )
    ]
    assert plan[0].startswith("SEARCH c USING INTEGER PRIMARY KEY"), plan
    found, _, matrix = vectors.load_matrix(db, embedder.name, ids)
    assert found.tolist() == ids
    whole_ids, _, whole = vectors.load_matrix(db, embedder.name)
    np.testing.assert_array_equal(matrix, whole[np.isin(whole_ids, ids)])


def test_drop_model(db: sqlite3.Connection) -> None:
    add(db, "a.md", ["deer"])
    embed_pending(db, FakeEmbedder(dim=8))
    embed_pending(db, FakeEmbedder(dim=16))
    with Transaction(db):
        vectors.drop_model(db, "fake-8")
    assert vectors.count_missing(db, "fake-8") == 1
    assert vectors.count_missing(db, "fake-16") == 0
    with Transaction(db):
        vectors.drop_model(db)
    assert count(db, "SELECT COUNT(*) FROM embeddings") == 0


def test_meta_round_trip(db: sqlite3.Connection) -> None:
    assert vectors.get_meta(db, "model_name") is None
    with Transaction(db):
        vectors.set_meta(db, "model_name", "fake-64")
        vectors.set_meta(db, "model_name", "fake-32")
    assert vectors.get_meta(db, "model_name") == "fake-32"


def live_rows(index: VectorIndex) -> dict[int, tuple[int, bytes]]:
    """chunk id → (document id, vector bytes) of the rows a search can return."""
    dead = set() if index.dead is None else set(index.dead.tolist())
    return {
        int(c): (int(d), index.matrix[i].tobytes())
        for i, (c, d) in enumerate(zip(index.chunk_ids, index.doc_ids, strict=True))
        if i not in dead
    }


def test_incremental_vector_index_matches_a_fresh_load(
    db: sqlite3.Connection, db_path: Path
) -> None:
    """Random edits, deletions, embedding batches, dropped vectors and a pruned change log:
    after each, the index patched from the change log equals one loaded from scratch."""
    import random

    from tsm.search import vector

    embedder = FakeEmbedder(dim=8)
    rng = random.Random(3)
    key = str(db_path)
    vector._cache.pop((key, embedder.name), None)
    for step in range(60):
        action = rng.choice(["write", "write", "delete", "embed", "embed", "drop", "prune"])
        paths = [r[0] for r in db.execute("SELECT path FROM documents")]
        if action == "write" or not paths:
            path = f"n{rng.randrange(12)}.md"
            add(db, path, [f"{path} body {rng.randrange(5)} {i}" for i in range(rng.randint(1, 4))])
        elif action == "delete":
            doc_id = db.execute(
                "SELECT id FROM documents WHERE path = ?", (rng.choice(paths),)
            ).fetchone()[0]
            with Transaction(db):
                delete_document(db, doc_id)
        elif action == "embed":
            embed_pending(db, embedder, rng.randint(1, 5))
        elif action == "drop":
            with Transaction(db):
                vectors.drop_orphans(db)
                if rng.random() < 0.2:
                    vectors.drop_model(db, embedder.name)
        else:
            with Transaction(db):
                vectors.prune_changes(db, keep=rng.randint(0, 30))
        patched = vector.load_index(db, key, embedder.name)
        vector._cache.pop((key, embedder.name))
        fresh = vector.load_index(db, key, embedder.name)
        vector._cache[(key, embedder.name)] = patched  # keep patching the same index
        assert live_rows(patched) == live_rows(fresh), f"step {step}: {action}"
        assert patched.missing == fresh.missing
        if fresh.live_rows:
            query = embedder.embed_query("body 2")
            assert patched.nearest(query, 5) == fresh.nearest(query, 5)


def test_a_db_with_a_view_tsm_did_not_make_is_never_read(tmp_path: Path) -> None:
    """A cloned repository may ship its own .tsm/tsm.db: a view or trigger in it must not
    run when tsm reads or writes it. open_db refuses the file before any statement of ours
    touches it; a writer sets it aside and starts a new index."""
    db = tmp_path / "tsm.db"
    open_db(db, create=True).close()
    planted = sqlite3.connect(db)
    planted.execute("CREATE VIEW planted AS SELECT 1 AS x")
    planted.commit()
    planted.close()
    with pytest.raises(UserError, match="view tsm did not make .'planted'"):
        open_db(db)
    conn = open_db(db, create=True)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "planted" not in names and "documents" in names
    assert [p.name for p in tmp_path.glob("tsm.db.foreign-*")]  # kept, for the user to see


def test_loading_the_matrix_holds_little_more_than_the_matrix(db_path: Path) -> None:
    """The whole matrix is read a fetch at a time into one array. Before, every row's BLOB
    was held as a bytes object and then joined: twice the matrix at once (308 MB at 100k
    chunks of 384 floats), much of which the allocator kept in the daemon's RSS. Measured
    as the peak RSS of a fresh process while it loads (Linux: /proc/self/clear_refs)."""
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("peak RSS is read from /proc")
    embedder = FakeEmbedder(dim=384)
    conn = open_db(db_path, create=True)
    add(conn, "a.md", [f"chunk {i}" for i in range(20_000)])
    embed_pending(conn, embedder)
    conn.close()
    code = f"""
from pathlib import Path
from tsm.store import vectors
from tsm.store.connect import open_db
def kb(key):
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(key))
    return int(line.split()[1]) * 1024
conn = open_db(Path({str(db_path)!r}))
vectors.load_matrix(conn, "nothing")  # the code paths loaded, no rows
before = kb("VmRSS:")
Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from here
ids, docs, matrix = vectors.load_matrix(conn, {embedder.name!r})
print(matrix.shape[0], matrix.shape[1], matrix.nbytes, kb("VmHWM:") - before)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rows, dim, nbytes, growth = map(int, out.stdout.split())
    assert (rows, dim) == (20_000, 384)
    assert growth < 1.5 * nbytes, f"peak {growth / nbytes:.2f} x the matrix"
