"""The writes of tsm as values: index paths, ingest a transcript, plan a reindex, rebuild a
batch of keyword rows, drop the vectors, embed. `run` does any of them on one write
connection. In-process `LocalKnowledge` runs them inline; the daemon's writer thread queues
the same values and runs them one at a time, so both do exactly the same work."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..config import Settings
from ..embed import Embedder
from ..errors import UserError
from ..indexing import Progress, drop_orphan_vectors, embed_pending, index_paths, ingest_session
from ..sources import reader_for
from ..store import documents, vectors
from ..store.connect import Connection, open_store, rollback
from ..text.tokenizer import trim_tokenizer
from ..workspace import IgnoreRules
from .reindex import check_target, drop_vectors, fts_batches, rebuild_fts

log = logging.getLogger("tsm.jobs")


@dataclass(frozen=True)
class IndexJob:
    """Index files or folders (none: the content dirs, else the root); embed unless not
    `embed`. `changes`: the paths are what a file watcher saw change, so one that no longer
    exists is dropped if the index holds it and otherwise skipped, a path that vanishes
    meanwhile is skipped, and with no paths (a catch-up scan) a root nobody indexed is
    left alone."""

    paths: tuple[Path, ...] = ()
    embed: bool = True
    changes: bool = False

    @property
    def label(self) -> str:
        what = f"{len(self.paths)} paths" if self.paths else "all"
        return f"{'watch' if self.changes else 'index'}: {what}"


@dataclass(frozen=True)
class IngestJob:
    """Add or refresh one Claude Code transcript."""

    path: Path
    embed: bool = True

    @property
    def label(self) -> str:
        return f"ingest {self.path.name}"


@dataclass(frozen=True)
class ReindexPlan:
    """Check a reindex target and cut its work into the jobs below (returned, not run)."""

    target: str

    @property
    def label(self) -> str:
        return f"plan reindex {self.target}"


@dataclass(frozen=True)
class FtsJob:
    """Re-tokenize the stored chunks of these documents into fresh keyword rows."""

    doc_ids: tuple[int, ...]
    part: str = ""

    @property
    def label(self) -> str:
        return f"reindex fts {self.part}".rstrip()


@dataclass(frozen=True)
class DropVectorsJob:
    """Forget every vector; the next embed job embeds them again."""

    @property
    def label(self) -> str:
        return "drop vectors"


@dataclass(frozen=True)
class EmbedJob:
    """Embed up to `limit` chunks that lack a vector (None: all), holding the index's
    embedding role, then keep the books (indexing.embed_pending). Without a model only the
    books: orphan vectors are dropped."""

    limit: int | None = None

    @property
    def label(self) -> str:
        return f"embed {self.limit or 'all'}"


Job = IndexJob | IngestJob | ReindexPlan | FtsJob | DropVectorsJob | EmbedJob


def run(
    job: Job,
    settings: Settings,
    conn: Connection,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> Any:
    """Do `job` on the write connection `conn`; `embedder` embeds (None: leave the vectors to
    a later embed job). What each returns: IndexJob and IngestJob an IndexReport,
    ReindexPlan its jobs, FtsJob the rows written, DropVectorsJob the vectors dropped,
    EmbedJob the texts embedded."""
    if isinstance(job, IndexJob):
        model = embedder if job.embed else None
        if job.changes:
            return _index_changes(settings, conn, job.paths)
        return index_paths(settings, conn, job.paths, embedder=model, progress=progress)
    if isinstance(job, IngestJob):
        model = embedder if job.embed else None
        return ingest_session(settings, conn, job.path, model, progress)
    if isinstance(job, ReindexPlan):
        return reindex_jobs(conn, job.target)
    if isinstance(job, FtsJob):
        return rebuild_fts(settings, list(job.doc_ids))(conn)
    if isinstance(job, DropVectorsJob):
        return drop_vectors(conn)
    if embedder is None:
        return drop_orphan_vectors(conn)
    batch = int(settings.get("embedding.batch_size"))
    return embed_pending(conn, embedder, batch, None, progress, job.limit, role=settings.state_dir)


class Runner:
    """One write connection, and jobs run on it one at a time in the caller's thread (the
    daemon's writer thread). A job that fails leaves nothing half-done in the connection."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.conn = open_store(settings, create=True)

    def run(self, job: Job, embedder: Embedder | None = None) -> Any:
        try:
            return run(job, self.settings, self.conn, embedder)
        except BaseException:
            rollback(self.conn)
            raise
        finally:
            if isinstance(job, IndexJob | IngestJob | FtsJob):
                # Tokenizing documents touched much of the dictionary; a resident process
                # keeps only what its searches read again (text/tokenizer.py).
                trim_tokenizer()

    @property
    def changes(self) -> int:
        """Rows inserted, updated or deleted through this connection so far."""
        return int(self.conn.total_changes)

    def close(self) -> None:
        self.conn.close()


def reindex_jobs(conn: Connection, target: str) -> list[Job]:
    """`tsm reindex TARGET` as jobs: keyword rows a batch of documents at a time (so other
    writes get their turn in between), then the vectors dropped and embedded again."""
    jobs: list[Job] = []
    if check_target(target) in ("all", "fts"):
        batches = fts_batches(conn)
        jobs += [
            FtsJob(tuple(ids), f"{i}/{len(batches)}") for i, ids in enumerate(batches, start=1)
        ]
    if target in ("all", "vectors"):
        jobs += [DropVectorsJob(), EmbedJob()]
    return jobs


def has_pending(conn: Connection, model: str) -> bool:
    """Whether any chunk lacks a vector for `model`."""
    return bool(vectors.pending(conn, model, 1))


def indexable(path: Path) -> bool:
    """Whether a file of this name would be indexed (a reader knows its format)."""
    return reader_for(path) is not None


def _index_changes(settings: Settings, conn: Connection, paths: tuple[Path, ...]) -> Any:
    """A watcher's batch, looked at as the files are now: index what exists, drop what
    vanished, skip what was never indexed or is ignored; with no paths, catch up with the
    whole root if it was indexed before (a daemon never turns a folder nobody indexed into
    an index)."""
    if not paths:
        return index_paths(settings, conn) if documents.has_any(conn) else None
    rules = IgnoreRules(settings.index_root)
    targets = [p for p in sorted(paths) if _wanted(settings.index_root, rules, conn, p)]
    if not targets:
        return None
    try:
        return index_paths(settings, conn, targets)
    except UserError:  # a path vanished after we looked: do them one by one
        for path in targets:
            try:
                index_paths(settings, conn, [path])
            except UserError as exc:
                log.info("watcher: skipped %s: %s", path, exc.message)
        return None


def _wanted(root: Path, rules: IgnoreRules, conn: Connection, path: Path) -> bool:
    try:
        rel = PurePosixPath(path.relative_to(root)).as_posix()
    except ValueError:
        return False
    if path.is_dir():
        return not rules.ignored_within(rel, is_dir=True)
    if path.exists():
        return indexable(path) and not rules.ignored_within(rel)
    return documents.has_under(conn, rel, itself=True)  # gone: a file or folder we hold
