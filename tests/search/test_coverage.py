"""Term coverage and keyword evidence on a real SQLite index, against hand-computed values."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tsm.models import Chunk, Document, Section
from tsm.search.coverage import TermCoverage
from tsm.store.connect import Transaction, open_db
from tsm.store.documents import ChunkRow, write_document

BODIES = ["p53 tumour suppressor", "p53 apoptosis", "mitochondria apoptosis", "ribosome"]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = open_db(tmp_path / "tsm.db", create=True)
    for i, body in enumerate(BODIES):
        doc = Document(
            path=f"d{i}.md", type="markdown", title="", text=body, sections=(Section("", body),)
        )
        rows = [
            ChunkRow(
                Chunk(0, "", body), fts_title="", fts_section="", fts_body=body, embed_hash=f"h{i}"
            )
        ]
        with Transaction(db):
            write_document(
                db, doc, rows, content_hash=f"c{i}", size=1, mtime=1.0, category="note", fts_tags=""
            )
    yield db
    db.close()


def idf(df: int, total: int = len(BODIES)) -> float:
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


def chunk_of(conn: sqlite3.Connection, body: str) -> int:
    return int(conn.execute("SELECT id FROM chunks WHERE text = ?", (body,)).fetchone()[0])


def test_coverage_is_the_idf_share_of_the_query_a_chunk_contains(conn: sqlite3.Connection) -> None:
    cover = TermCoverage(conn, ["p53", "apoptosis"])
    both, one = chunk_of(conn, "p53 apoptosis"), chunk_of(conn, "mitochondria apoptosis")
    assert cover.per_chunk([both, one]) == pytest.approx({both: 1.0, one: 0.5})  # df 2 and 2


def test_unknown_words_count_against_coverage_but_not_against_evidence(
    conn: sqlite3.Connection,
) -> None:
    """A query half in another language: its Japanese word occurs in no chunk."""
    cover = TermCoverage(conn, ["p53", "腫瘍"])
    chunk = chunk_of(conn, "p53 tumour suppressor")
    unseen = idf(0)
    assert cover.best([chunk]) == pytest.approx(idf(2) / (idf(2) + unseen))
    # every known word is in the chunk (1.0), damped by sqrt(1 known word of 2)
    assert cover.keyword_evidence([chunk]) == pytest.approx(math.sqrt(0.5))


def test_evidence_of_known_but_unmatched_words(conn: sqlite3.Connection) -> None:
    cover = TermCoverage(conn, ["ribosome", "apoptosis"])
    chunk = chunk_of(conn, "ribosome")
    assert cover.keyword_evidence([chunk]) == pytest.approx(idf(1) / (idf(1) + idf(2)))


def test_no_known_word_is_no_evidence(conn: sqlite3.Connection) -> None:
    cover = TermCoverage(conn, ["腫瘍", "抑制"])
    assert cover.keyword_evidence([chunk_of(conn, "ribosome")]) == 0.0
    assert TermCoverage(conn, []).keyword_evidence([1]) == 0.0
