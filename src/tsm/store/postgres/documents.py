"""Writing documents on PostgreSQL, where several writers (two `tsm index` on two machines,
a daemon) may share one store. Each transaction that writes or removes documents first takes
`lock_paths` on their paths, then checks again what it decided before the lock
(indexing.py): a transaction-scoped advisory lock per path rather than a version column,
because the decision to write rests on the file as well as on the row (a writer must not
store content older than what another one stored; a vanished file must not be removed after
another writer saw it come back), and a lock keeps the whole read-check-write under one hold
without a new column in both schemas. Keyword rows follow their chunks by cascade."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .keywords import POSTINGS, stored_terms

if TYPE_CHECKING:
    from ..connect import Connection
    from ..protocol import ChunkValues, DocumentContents

# Taken shared by every document writer, exclusive by vectors.drop_orphans: a text's vector
# must not be dropped as unused while a writer's uncommitted chunk still needs it. Advisory
# locks with two int4 keys live apart from the one-bigint keys of the paths.
WRITERS_LOCK = (0x74736D, 0x646F63)  # "tsm", "doc"


def lock_paths(conn: Connection, paths: Sequence[str]) -> None:
    """Locks are taken in sorted order, so two writers that each lock several paths cannot
    deadlock."""
    keys = sorted(set(paths))
    if len(keys) == 1:  # the common case in one round trip; the shared lock comes first
        conn.execute(
            "SELECT pg_advisory_xact_lock_shared(?, ?), "
            "pg_advisory_xact_lock(hashtextextended(?, 0))",
            (*WRITERS_LOCK, keys[0]),
        )
        return
    conn.execute("SELECT pg_advisory_xact_lock_shared(?, ?)", WRITERS_LOCK)
    if keys:  # unnest keeps the array's (sorted) order
        conn.execute(
            "SELECT count(pg_advisory_xact_lock(hashtextextended(p, 0))) FROM unnest(?::text[]) p",
            (keys,),
        )


def exclude_writers(conn: Connection) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(?, ?)", WRITERS_LOCK)


def lock_twin(conn: Connection, path: str) -> bool:
    row = conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", (path,))
    return bool(row.fetchone()[0])


def remove_path(conn: Connection, path: str) -> None:
    """One round trip: the keys cascade to chunks and their keyword rows."""
    conn.execute("DELETE FROM documents WHERE path = ?", (path,))


_CHUNK_COLUMNS = "document_id, chunk_index, section, page, line, chunk_date, text, embed_hash"


def insert_chunks(conn: Connection, values: Sequence[ChunkValues]) -> list[int]:
    """In one statement: a round trip per chunk is most of a small document's write time."""
    if not values:
        return []
    marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(values))
    found = conn.execute(
        f"INSERT INTO chunks({_CHUNK_COLUMNS}) VALUES {marks} RETURNING chunk_index, id",
        [field for v in values for field in v],
    ).fetchall()
    ids = dict(found)  # by chunk_index (text/chunk.py numbers them 0..n-1), not row order
    return [int(ids[v[1]]) for v in values]


# A document's whole write in one statement: its id drawn first (as the row's default would
# draw it), then its chunks (their ids drawn in chunk order), keyword rows, postings, tags,
# links and names, each a sub-statement reading that id and the chunks' new ids, and the
# document's row itself last. Nothing in it is read back, so it joins the transaction's
# pipeline and the writer waits for the server only at the commit. The foreign keys are
# checked at the statement's end, when the document's row is in.
_DOCUMENT = f"""
    WITH d AS MATERIALIZED (
        SELECT nextval(pg_get_serial_sequence('documents', 'id')) AS id
    ), x AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(?::jsonb)
            AS x(i INTEGER, s TEXT, p INTEGER, ln INTEGER, dt TEXT, tx TEXT, h TEXT,
                 n INTEGER, t TEXT)
    ), c AS (
        INSERT INTO chunks(document_id, chunk_index, section, page, line, chunk_date, text,
                           embed_hash)
        SELECT d.id, x.i, x.s, x.p, x.ln, x.dt, x.tx, x.h FROM d CROSS JOIN x ORDER BY x.i
        RETURNING id, chunk_index
    ), k AS (
        INSERT INTO chunk_keywords(chunk_id, terms, tokens)
        SELECT c.id, x.t, x.n FROM c JOIN x ON x.i = c.chunk_index
    ), p AS (
        INSERT INTO keyword_postings(lexeme, chunk_id, document_id, c0, c1, c2, c3, tokens)
        SELECT e.lexeme, c.id, d.id, e.c0, e.c1, e.c2, e.c3, x.n
        FROM d CROSS JOIN c JOIN x ON x.i = c.chunk_index
        CROSS JOIN LATERAL ({POSTINGS.format(terms="x.t")}) e
    ), tg AS (
        INSERT INTO tags(document_id, tag)
        SELECT d.id, t.tag FROM d, unnest(?::text[]) WITH ORDINALITY AS t(tag, o) ORDER BY t.o
        ON CONFLICT DO NOTHING
    ), lk AS (
        INSERT INTO links(document_id, target, link_type, target_key)
        SELECT d.id, l.target, l.kind, l.key
        FROM d, unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS l(target, kind, key, o)
        ORDER BY l.o
    ), nm AS (
        INSERT INTO names(document_id, name, kind)
        SELECT d.id, n.name, n.kind
        FROM d, unnest(?::text[], ?::text[]) WITH ORDINALITY AS n(name, kind, o) ORDER BY n.o
    )
    INSERT INTO documents(id, {{columns}}) VALUES ((SELECT id FROM d), {{marks}}) RETURNING id"""


def insert_document(
    conn: Connection, columns: Sequence[str], values: Sequence[object], contents: DocumentContents
) -> Callable[[], int]:
    """One statement (_DOCUMENT), its chunks and their stored terms as one JSON text."""
    fields = [
        {"i": index, "s": _text(section), "p": page, "ln": line, "tx": _text(text)}
        | {"dt": date and _text(date), "h": embed_hash, "t": terms, "n": tokens}
        for (index, section, page, line, date, text, embed_hash), (terms, tokens) in zip(
            contents.chunks, stored_terms(contents.keywords), strict=True
        )
    ]
    sql = _DOCUMENT.format(columns=", ".join(columns), marks=", ".join(["?"] * len(values)))
    links = list(zip(*contents.links, strict=True)) or [(), (), ()]
    names = list(zip(*contents.names, strict=True)) or [(), ()]
    cursor = conn.execute(
        sql,
        (
            _json(fields),
            _texts(contents.tags),
            *map(_texts, links),
            *map(_texts, names),
            *values,
        ),
    )
    return lambda: int(cursor.fetchone()[0])


def _json(rows: object) -> str:
    return json.dumps(rows, ensure_ascii=False)


def _text(text: str) -> str:
    """PostgreSQL text cannot hold NUL (nor jsonb its escape): U+FFFD instead, as the
    connection does for the plain texts it sends (connection._storable)."""
    return text.replace("\x00", "\ufffd")


def _texts(items: Sequence[str]) -> list[str]:
    return [_text(item) for item in items]
