"""The vector change log on PostgreSQL (migration m003). Writers there commit in any order,
so an entry with a lower seq may become visible after a higher one: a reader's stamp is
(oldest running transaction, entries since it, latest seq)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..meta import get_meta, set_meta

if TYPE_CHECKING:
    from ..connect import Connection
    from ..protocol import Stamp

_STAMP = """WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
    SELECT s.xmin::text::bigint,
           (SELECT COUNT(*) FROM vector_changes WHERE xid >= s.xmin),
           (SELECT COALESCE(MAX(seq), 0) FROM vector_changes)
    FROM s"""


def change_seq(conn: Connection) -> Stamp:
    xmin, since, latest = conn.execute(_STAMP).fetchone()
    return (int(xmin), int(since), int(latest))


_SINCE = """SELECT (SELECT COUNT(*) FROM vector_changes WHERE xid >= ?::text::xid8),
           (SELECT COALESCE(MAX(seq), 0) FROM vector_changes),
           (SELECT value FROM meta WHERE key = 'vector_changes_pruned_xid')"""


def unchanged_since(conn: Connection, stamp: Stamp) -> bool:
    """The stamp's oldest running transaction moves whenever any transaction on the server
    ends, so comparing stamps would reload on every search of a busy server; instead the
    entries from that transaction on are counted again: only new ones raise the count, and
    only pruning (which is checked) removes any."""
    if not isinstance(stamp, tuple) or len(stamp) != 3:
        return False
    xmin, since, latest = stamp
    now_since, now_latest, pruned = conn.execute(_SINCE, (str(xmin),)).fetchone()
    if pruned is not None and int(pruned) >= xmin:
        return False
    return (int(now_since), int(now_latest)) == (since, latest)


def changes_since(conn: Connection, stamp: Stamp) -> tuple[list[int], Stamp] | None:
    """Every transaction older than the stamp's oldest running one had ended when the stamp
    was read, and its entries were applied then; so the entries of transactions from that
    one on are all a reader may lack (some it has seen: applying them twice is harmless)."""
    if not isinstance(stamp, tuple) or len(stamp) != 3:
        return None  # a stamp of another store
    pruned = get_meta(conn, "vector_changes_pruned_xid")
    if pruned is not None and int(pruned) >= stamp[0]:
        return None
    current = change_seq(conn)
    if current == stamp:
        return [], stamp
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT chunk_id FROM vector_changes WHERE xid >= ?::text::xid8",
            (str(stamp[0]),),
        )
    ]
    return ids, current


def prune_changes(conn: Connection, keep: int) -> int:
    (latest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_changes").fetchone()
    (newest_xid,) = conn.execute(
        "SELECT MAX(xid)::text FROM vector_changes WHERE seq <= ?", (latest - keep,)
    ).fetchone()
    if newest_xid is None:
        return 0
    set_meta(conn, "vector_changes_pruned_xid", newest_xid)
    return conn.execute(
        "DELETE FROM vector_changes WHERE xid <= ?::text::xid8", (newest_xid,)
    ).rowcount
