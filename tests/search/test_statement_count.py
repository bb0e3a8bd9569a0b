"""A search reads the store a fixed number of times: the signals ask once each, the ranking
reads nothing, and the chosen hits are hydrated in one batch. So the statements one search
issues do not grow with `-k` or with the number of hits, on SQLite and on PostgreSQL
(TSM_TEST_STORE=postgres), counted on the real connection: SQLite's trace callback, or
every statement psycopg sends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tsm import config
from tsm.core.knowledge import LocalKnowledge
from tsm.core.request import SearchRequest, clock
from tsm.search import chunkmap, vector
from tsm.store.connect import Connection

MAX_STATEMENTS = 12

QUERIES: list[dict[str, Any]] = [
    {"text": "install git"},
    {"text": "what did I write about LoRa last month"},
    {"text": "git", "mode": "fts"},
    {"text": "how do I set up a router", "mode": "vector"},
    {"text": "install git", "tags": ("git",)},
    {"text": "install git", "paths": ("notes",)},
    {"text": "LoRa", "include_content": 50},
    # Phrases of several terms: "wi-fi" is two to FTS5, and the bridge translates "power
    # consumption" into 消費 電力 (PostgreSQL matches phrases in the same statements).
    {"text": "power consumption of a wi-fi module"},
]


@contextmanager
def counted(conn: Connection) -> Iterator[list[str]]:
    """Every statement the connection runs inside the block, as sent."""
    sent: list[str] = []
    raw = getattr(conn, "raw", None)
    if raw is None:  # SQLite: top-level statements only ("--" marks a trigger's)
        conn.set_trace_callback(lambda sql: sent.append(sql) if not sql.startswith("--") else None)  # type: ignore[union-attr]
        try:
            yield sent
        finally:
            conn.set_trace_callback(None)  # type: ignore[union-attr]
        return
    import psycopg

    class CountingCursor(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
            sent.append(str(query))
            return super().execute(query, params, **kw)

        def executemany(self, query: Any, params_seq: Any, **kw: Any) -> Any:
            sent.append(str(query))
            return super().executemany(query, params_seq, **kw)

    before = raw.cursor_factory
    raw.cursor_factory = CountingCursor
    try:
        yield sent
    finally:
        raw.cursor_factory = before


def another_transaction_ends(knowledge: LocalKnowledge) -> None:
    """A write elsewhere on the server that touches no note: on PostgreSQL it moves the
    oldest running transaction that readers' change-log stamps hold, as every other
    client's writes do on a shared server."""
    conn = knowledge.conn()
    if getattr(conn, "raw", None) is not None:
        conn.execute("SELECT pg_current_xact_id()").fetchone()


def statements(knowledge: LocalKnowledge, asked: dict[str, Any], k: int) -> list[str]:
    another_transaction_ends(knowledge)
    request = SearchRequest(**asked, top_k=k, now=clock())
    with counted(knowledge.conn()) as sent:
        result = knowledge.search(request)
    assert result.results, asked
    return sent


@pytest.fixture
def knowledge(indexed_read_only: Path) -> Iterator[LocalKnowledge]:
    local = LocalKnowledge(config.load(indexed_read_only))
    local.search(SearchRequest("warm up", now=clock()))  # caches filled once per process
    yield local
    local.close()


@pytest.mark.parametrize("asked", QUERIES, ids=lambda asked: "-".join(map(str, asked.values())))
def test_a_search_issues_a_fixed_number_of_statements(
    knowledge: LocalKnowledge, asked: dict[str, Any]
) -> None:
    few = statements(knowledge, asked, 5)
    many = statements(knowledge, asked, 50)
    assert len(many) <= MAX_STATEMENTS, "\n".join(many)
    assert len(few) == len(many), "\n---\n".join(["\n".join(few), "\n".join(many)])


def test_many_hits_cost_what_a_few_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tsm: Any
) -> None:
    """Sixty tagged notes that all match, each linked both ways with a note that does not:
    a page of 50 hits, each with related notes, tags and whole text, reads the store as
    often as a page of 5."""
    root = tmp_path / "many"
    (root / "notes").mkdir(parents=True)
    for n in range(60):
        (root / "notes" / f"note-{n}.md").write_text(
            f"---\ntitle: note {n}\ntags: [antenna, band/{n % 3}]\n---\n"
            f"# Antenna {n}\n\nThe antenna tuning log {n}, see [[other {n}]].\n",
            encoding="utf-8",
        )
        (root / "notes" / f"other-{n}.md").write_text(
            f"---\ntitle: other {n}\n---\nA coil winding, see [log](note-{n}.md).\n",
            encoding="utf-8",
        )
    monkeypatch.setenv("TSM_INDEX_ROOT", str(root))
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    local = LocalKnowledge(config.load(root))
    try:
        asked = {"text": "antenna tuning", "mode": "fts", "include_content": 50}
        statements(local, asked, 5)  # caches filled once per process
        few, many = statements(local, asked, 5), statements(local, asked, 50)
        result = local.search(SearchRequest(**asked, top_k=50, now=clock()))
    finally:
        local.close()
    assert len(result.results) == 50 and all(hit.related for hit in result.results)
    assert len(many) <= MAX_STATEMENTS, "\n".join(many)
    assert len(few) == len(many), "\n---\n".join(["\n".join(few), "\n".join(many)])


def test_a_search_asks_the_change_log_once_per_stamp(
    indexed_read_only: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk map (which counts the keyword matches) and the vector index each check the
    change log against the stamp they were read at: one search asks once per distinct
    stamp. SQLite's stamp is the log's last entry, the same for both until a write; on
    PostgreSQL it also holds the oldest transaction running when each was read, which
    another client's work may have moved in between. Few candidates per signal make the
    keyword ranking full, so the matches are counted."""
    monkeypatch.setenv("TSM_CANDIDATES", "1")
    settings = config.load(indexed_read_only)
    local = LocalKnowledge(settings)
    try:
        asked = {"text": "git install notes", "top_k": 1}
        local.search(SearchRequest(**asked, now=clock()))  # caches filled once per process
        another_transaction_ends(local)
        with counted(local.conn()) as sent:
            result = local.search(SearchRequest(**asked, now=clock()))
        model = local.embedder().name  # type: ignore[union-attr]
    finally:
        local.close()
    # a full keyword ranking (3 deep) is counted; the vectors were used
    assert result.total_matches >= 3 and result.mode == "hybrid"
    stamps = {
        chunkmap._cache[settings.store_key].stamp,
        vector._cache[settings.store_key, model].stamp,
    }
    log = [sql for sql in sent if "vector_changes" in sql or "sqlite_sequence" in sql]
    assert len(log) == len(stamps), "\n".join(log)
    if all(isinstance(stamp, int) for stamp in stamps):
        assert len(stamps) == 1  # SQLite's stamps: nothing was written in between
