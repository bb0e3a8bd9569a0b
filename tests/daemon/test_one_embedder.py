"""One process embeds a given chunk. A `tsm index` that embeds in its own process and a
daemon started meanwhile (a search autostarts one, as `claude mcp list` once did) both find
the same chunks without a vector; only the holder of the index's embedding role embeds
them, the other waits. The index counts every text it embeds (meta `embedded_texts`), so
a text embedded twice shows as more counted than stored. The real CLI, daemon and model."""

from __future__ import annotations

import sqlite3
from typing import Any

from daemon_harness import Harness, wait_for

NOTES = 400  # long enough to embed, even on a quiet machine, for the two to overlap
# Other settings than the daemon's: `tsm index` then works in-process beside it, as it does
# when it started before the daemon (which then cannot take its work over).
OTHER_SETTINGS = {"TSM_TOP_K": "7"}


def counts(h: Harness) -> tuple[int, int]:
    """(texts ever embedded, vectors stored) for the index's model."""
    db = sqlite3.connect(h.state / "tsm.db")
    try:
        counted = db.execute("SELECT value FROM meta WHERE key = 'embedded_texts'").fetchone()
        stored = db.execute("SELECT count(*) FROM embeddings").fetchone()
        return int(counted[0]) if counted else 0, int(stored[0])
    finally:
        db.close()


def backfill(h: Harness) -> dict[str, Any]:
    return dict(h.status()["queue"]["backfill"])


def backfill_idle(h: Harness) -> dict[str, Any] | None:
    queue = h.status()["queue"]
    done = queue["chunks_without_vectors"] == 0 and queue["backfill"]["state"] == "idle"
    return queue["backfill"] if done else None


def test_index_beside_an_embedding_daemon_embeds_no_text_twice(harness: Harness) -> None:
    notes = harness.root / "many"
    notes.mkdir()
    for i in range(NOTES):
        words = " ".join(f"w{i}x{j}" for j in range(40))
        (notes / f"n{i:03}.md").write_text(f"# Note {i}\n\nDistinct note {i}: {words}.\n")
    first = harness.cli("index", "--no-embed", "-f", "json")
    assert first.code == 0, first.err
    before_counted, before_stored = counts(harness)
    pending = harness.status()["chunks_without_vectors"]
    assert pending >= NOTES

    harness.start("--no-watch")  # its backfill finds the chunks without a vector
    wait_for(lambda: backfill(harness)["embedded_since_start"], 600, "the backfill to embed")
    index = harness.cli("index", "-f", "json", env=OTHER_SETTINGS, timeout=1800)
    assert index.code == 0, index.err
    by_daemon = wait_for(lambda: backfill_idle(harness), 600, "the backfill to be idle")

    counted, stored = counts(harness)
    by_index = index.json()["embedded"]
    assert stored - before_stored == pending
    twice = counted - before_counted - pending
    assert twice == 0, f"{twice} of {pending} texts were embedded twice"
    assert by_index + by_daemon["embedded_since_start"] == pending
