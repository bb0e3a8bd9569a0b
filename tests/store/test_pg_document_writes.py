"""A document's write on PostgreSQL: what `tsm index` stores, and how often it waits for the
server. Real server (scripts/postgres), the real indexing pipeline; the waits are read from
libpq's own trace of the protocol (each ReadyForQuery the server sends ends one: a statement
outside a pipeline, or a pipeline's sync)."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tsm import config
from tsm.indexing import index_paths
from tsm.store.connect import Connection, open_store

pytestmark = pytest.mark.postgres


def write_notes(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.md").write_text(
            f"---\ntitle: {name} title\ntags: [alpha, beta/{name}, alpha]\n"
            f"aliases: [{name}-alias]\n---\n# {name}\n\n"
            f"The {name} note links [[other note]] and [a file](sub/{name}.md).\n\n"
            f"## More about {name}\n\nWords, words and more words about {name} #gamma.\n",
            encoding="utf-8",
        )


def settings_for(root: Path, state: Path, url: str | None) -> config.Settings:
    environ = {"TSM_INDEX_ROOT": str(root), "TSM_STATE_DIR": str(state), "TSM_NO_USER_CONFIG": "1"}
    if url:
        environ["TSM_STORE_URL"] = url
    return config.load(root, environ)


@contextmanager
def waits(conn: Any) -> Iterator[Callable[[], int]]:
    """Counts the client's waits for the server inside the block."""
    from psycopg.pq import Trace

    with tempfile.TemporaryFile("w+") as trace:
        conn.raw.pgconn.trace(trace.fileno())
        conn.raw.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        counted: list[int] = []
        try:
            yield lambda: counted[0]
        finally:
            conn.raw.pgconn.untrace()
            trace.seek(0)
            ready = re.compile(r"^B\t\d+\tReadyForQuery\b")
            counted.append(sum(1 for line in trace if ready.match(line)))


def index_counting(settings: config.Settings, conn: Connection) -> tuple[int, int]:
    """(documents written, waits for the server) of one `tsm index` run."""
    with waits(conn) as count:
        report = index_paths(settings, conn)
    return report.indexed, count()


def test_a_new_document_waits_for_the_server_twice(tmp_path: Path, pg_url: str) -> None:
    """The look-up under its lock, and the commit: the document, its chunks, keyword rows,
    tags, links and names go in one statement of the transaction's pipeline, whose ids
    nothing waits for, and the look-up before a file is read serves the next files too."""
    root = tmp_path / "root"
    write_notes(root / "notes", ["zero"])
    settings = settings_for(root, tmp_path / "state", pg_url)
    conn = open_store(settings, create=True)
    # psycopg prepares a statement on its fifth run, a wait of its own outside a pipeline
    conn.raw.prepare_threshold = None
    try:
        index_paths(settings, conn)  # the root's first write records its workspace
        write_notes(root / "notes", [f"first-{i}" for i in range(4)])
        first = index_counting(settings, conn)
        write_notes(root / "notes", [f"second-{i}" for i in range(8)])
        second = index_counting(settings, conn)  # the same fixed cost, four more documents
    finally:
        conn.close()
    assert (first[0], second[0]) == (4, 8)
    per_document = (second[1] - first[1]) / (second[0] - first[0])
    assert per_document == 2


def rows_by_path(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """What the store holds of its documents, by path and chunk number (never by id)."""

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in conn.execute(sql).fetchall())

    return {
        "documents": rows(
            """SELECT path, type, title, content_hash, size, mtime, category, status, created,
                      updated, doc_date, date_source, aliases, text FROM documents"""
        ),
        "chunks": rows(
            """SELECT d.path, c.chunk_index, c.section, c.page, c.line, c.chunk_date, c.text,
                      c.embed_hash FROM chunks c JOIN documents d ON d.id = c.document_id"""
        ),
        "tags": rows("SELECT d.path, t.tag FROM tags t JOIN documents d ON d.id = t.document_id"),
        "links": rows(
            """SELECT d.path, l.target, l.link_type, l.target_key
               FROM links l JOIN documents d ON d.id = l.document_id"""
        ),
        "names": rows(
            "SELECT d.path, n.name, n.kind FROM names n JOIN documents d ON d.id = n.document_id"
        ),
    }


def test_the_stores_hold_the_same_rows_and_every_chunk_its_keywords(
    tmp_path: Path, pg_url: str
) -> None:
    root = tmp_path / "root"
    write_notes(root / "notes", ["one", "two", "three"])
    (root / "notes" / "nul.md").write_text(
        '---\ntitle: "a\\0b"\ntags: ["x\\0y"]\n---\n# h\n\nbody\n'
    )
    stores = {}
    for name, url in (("sqlite", None), ("postgres", pg_url)):
        settings = settings_for(root, tmp_path / f"state-{name}", url)
        conn = open_store(settings, create=True)
        try:
            assert index_paths(settings, conn).indexed == 4
            stores[name] = rows_by_path(conn)
            if url:
                ids = conn.execute(
                    """SELECT c.id, c.document_id, k.chunk_id,
                              (SELECT count(*) FROM keyword_postings p
                               WHERE p.chunk_id = c.id AND p.document_id = c.document_id),
                              (SELECT count(*) FROM keyword_postings p WHERE p.chunk_id = c.id)
                       FROM chunks c LEFT JOIN chunk_keywords k ON k.chunk_id = c.id
                       ORDER BY c.document_id, c.chunk_index"""
                ).fetchall()
        finally:
            conn.close()
    sqlite, postgres = stores["sqlite"], stores["postgres"]
    # PostgreSQL keeps a NUL of the text as U+FFFD (store/postgres/connection.py)
    assert postgres == {
        table: [tuple(_no_nul(v) for v in row) for row in rows] for table, rows in sqlite.items()
    }
    assert ids and all(k == c and own == every > 0 for c, _, k, own, every in ids)
    assert [c for c, *_ in ids] == sorted(c for c, *_ in ids)  # drawn in chunk order


def _no_nul(value: object) -> object:
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def test_keyword_rows_rewritten_find_their_documents_by_key(pg: Any) -> None:
    """`tsm reindex fts` and `tsm import` write keyword rows for stored chunks: the postings'
    document ids are each chunk's, read by its key, never by scanning every chunk stored
    (a cost that grew with the store). The plan the server makes is checked, with enough
    chunks stored that a scan and a look-up by key differ."""
    import psycopg

    from tests.store.notes import add_note, chunk_ids
    from tsm.store.connect import Transaction
    from tsm.store.documents import replace_keyword_rows

    for n in range(400):
        add_note(pg, f"notes/n{n}.md", [f"alpha beta {n}", f"gamma delta {n}"])
    pg.execute("ANALYZE chunks")
    doc_id = int(pg.execute("SELECT id FROM documents WHERE path = 'notes/n7.md'").fetchone()[0])
    plans: list[Any] = []

    class Explaining(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
            if "INSERT INTO keyword_postings" in str(query):
                explain = psycopg.Cursor(pg.raw)  # not this class: it would explain itself
                explain.execute("EXPLAIN (FORMAT JSON) " + str(query), params)
                plans.append(explain.fetchone()[0])
            return super().execute(query, params, **kw)

    rows = [(cid, "t", "", f"epsilon {cid}", "") for cid in chunk_ids(pg, doc_id)]
    pg.raw.cursor_factory = Explaining
    try:
        with Transaction(pg):
            replace_keyword_rows(pg, doc_id, rows)
    finally:
        pg.raw.cursor_factory = psycopg.Cursor
    assert len(plans) == 1

    def scans(node: dict[str, Any]) -> Iterator[tuple[str, str]]:
        yield node["Node Type"], node.get("Relation Name", "")
        for child in node.get("Plans", ()):
            yield from scans(child)

    found = list(scans(plans[0][0]["Plan"]))
    assert ("Index Scan", "chunks") in found or ("Index Only Scan", "chunks") in found
    assert ("Seq Scan", "chunks") not in found
    stored = pg.execute(
        """SELECT count(*), count(*) FILTER (WHERE p.document_id = ?) FROM keyword_postings p
           WHERE p.chunk_id = ANY(?)""",
        (doc_id, [r[0] for r in rows]),
    ).fetchone()
    assert stored[0] == stored[1] == 6  # "t", "epsilon" and a number in each of two chunks
