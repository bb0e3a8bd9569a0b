"""`tsm reindex`: rebuild keyword rows or vectors from the stored text (the files are not
read again). The daemon runs the same jobs on its writer thread, in the background; without
a daemon they run here and are waited for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import UserError
from ..store import documents, vectors
from ..store.connect import Connection, Transaction

if TYPE_CHECKING:
    from ..text.tokenizer import JapaneseTokenizer

TARGETS = ("all", "fts", "vectors")
Job = Callable[[Connection], int]


@dataclass
class ReindexReport:
    """What `tsm reindex` did or started (`background`: the daemon goes on with it)."""

    target: str
    background: bool
    fts_documents: int | None = None
    vectors_dropped: int | None = None
    embedded: int | None = None


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise UserError(f"unknown reindex target {target!r}", "use all, fts or vectors")
    return target


def fts_batches(conn: Connection, batch: int = 100) -> list[list[int]]:
    """Document ids in batches (the daemon runs one writer job per batch)."""
    ids = documents.document_ids(conn)
    return [ids[i : i + batch] for i in range(0, len(ids), batch)]


def rebuild_fts(settings: Settings, doc_ids: list[int]) -> Job:
    """A job that re-tokenizes the stored chunks of `doc_ids` into fresh keyword rows (after
    a tokenizer or user-dictionary change)."""

    def job(conn: Connection) -> int:
        from ..text.tokenizer import compiled_user_dict, get_tokenizer

        tokenizer = get_tokenizer(compiled_user_dict(settings.state_dir))
        rows = 0
        with Transaction(conn):
            for doc_id in doc_ids:
                source = documents.keyword_source(conn, doc_id)
                if source is None:  # deleted since the batches were planned
                    continue
                documents.replace_keyword_rows(conn, doc_id, keyword_rows(tokenizer, source))
                rows += len(source.chunks)
        return rows

    return job


def keyword_rows(
    tokenizer: JapaneseTokenizer, source: documents.KeywordSource
) -> list[tuple[int, str, str, str, str]]:
    """A document's keyword rows (chunk id, title, section, body, tags) from its stored text,
    as indexing.py makes them from the file (also `tsm import`'s: core/transfer.py)."""
    title = tokenizer.index_text(source.title + " " + " ".join(source.aliases))
    tags = " ".join(tokenizer.index_text(t.replace("/", " ")) for t in source.tags)
    return [
        (cid, title, tokenizer.index_text(section), tokenizer.index_text(text), tags)
        for cid, section, text in source.chunks
    ]


def drop_vectors(conn: Connection) -> int:
    """Forget the vectors (vectors.drop_all: in a team store, this workspace's own); the next
    embedding run (or the daemon's backfill) embeds them again."""
    with Transaction(conn):
        return vectors.drop_all(conn)
