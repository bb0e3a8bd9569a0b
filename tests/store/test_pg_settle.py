"""After `tsm index` writes to a PostgreSQL store, the keyword ranking reads a term's postings
from the index alone: the run leaves the postings' pages marked visible to all
(store/postgres/keywords.settle), with no wait for autovacuum."""

from __future__ import annotations

import json
from pathlib import Path

import pg

from tests.conftest import Tsm
from tsm.store.postgres import connection as postgres


def heap_fetches(url: str, lexeme: str) -> tuple[int, int]:
    """The postings of `lexeme` counted by an index-only scan: (rows, heap fetches)."""
    conn = postgres.connect(url)
    try:
        conn.raw.execute("SET enable_seqscan = off")
        conn.raw.execute("SET enable_bitmapscan = off")
        (plan,) = conn.raw.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM keyword_postings "
            "WHERE lexeme = %s",
            (lexeme,),
        ).fetchone()
    finally:
        conn.close()
    node = plan[0]["Plan"]
    while node["Node Type"] != "Index Only Scan":
        (node,) = node["Plans"]
    return node["Actual Rows"], node["Heap Fetches"]


def test_an_index_run_leaves_the_postings_readable_from_the_index_alone(
    tmp_path: Path, pg_server: pg.PgServer, tsm: Tsm
) -> None:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    for n in range(40):
        (root / "notes" / f"lantern-{n}.md").write_text(
            f"# Lantern {n}\n\nThe lantern by the door, note {n}.\n", encoding="utf-8"
        )
    with pg.fresh_database(pg_server) as url:
        env = {"TSM_INDEX_ROOT": str(root), "TSM_STORE_URL": url}
        done = tsm("index", "--no-embed", "-f", "json", env=env, cwd=root)
        assert done.code == 0, done.err
        assert json.loads(done.out)["indexed"] == 40
        rows, fetched = heap_fetches(url, "lantern")
        assert rows == 40
        assert fetched == 0
