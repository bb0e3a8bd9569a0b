"""The one object every interface calls. `Knowledge` names the operations; `LocalKnowledge`
runs them in this process against the index. The daemon answers the same operations for
other processes (client/remote.py), and `client.connect` picks one for a caller.

Opening the DB and loading the model are lazy, so a command that never searches vectors
never pays for the model."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..config import Settings
from ..embed import Embedder, get_embedder, use_bulk_threads
from ..embed.names import model_name_of
from ..errors import TsmError
from ..indexing import IndexReport, Progress
from ..models import SearchResult
from ..statedir import open_private, private_dir
from ..store import catalog
from ..store.connect import Connection, open_store
from . import jobs
from .reindex import ReindexReport, check_target
from .request import SearchRequest
from .scaffolds import scaffolds

if TYPE_CHECKING:
    from ..search.query import Query
    from .context import ContextRequest, Injection
    from .doctor import DoctorReport
    from .rebuild import DaemonControl
    from .transfer import ExportReport, ImportReport


class Knowledge(Protocol):
    """The operations of tsm, whoever runs them: this process (LocalKnowledge), the daemon
    over its socket (client/remote.py), or the client choosing between the two
    (client/connect.py). The CLI, the daemon and the MCP server call nothing else."""

    settings: Settings

    def search(self, request: SearchRequest) -> SearchResult: ...

    def index(
        self, paths: Iterable[Path] = (), *, embed: bool = True, progress: Progress | None = None
    ) -> IndexReport: ...

    def ingest_session(self, path: Path, progress: Progress | None = None) -> IndexReport: ...

    def reindex(self, target: str, progress: Progress | None = None) -> ReindexReport: ...

    def rebuild_plan(self) -> dict[str, Any]: ...

    def rebuild(self, progress: Progress | None = None) -> dict[str, Any]: ...

    def init(self) -> dict[str, list[str]]: ...

    def export_index(self, file: Path) -> ExportReport: ...

    def import_index(self, file: Path, *, replace: bool = False) -> ImportReport: ...

    def list_documents(self, type_: str | None = None) -> list[catalog.DocumentSummary]: ...

    def tags(self) -> list[catalog.TagCount]: ...

    def info(self, ref: str) -> catalog.DocumentInfo: ...

    def get(self, ref: str) -> catalog.DocumentText: ...

    def status(self) -> Status: ...

    def doctor(self) -> DoctorReport: ...

    def context(self, request: ContextRequest) -> Injection: ...

    def close(self) -> None: ...


class LocalKnowledge:
    """Every operation, in this process. `conn`: an open connection to use (the daemon lends
    one of its WAL readers); `wait_for_vectors`: False while the daemon is still loading
    its model and vectors, so a search answers from its keywords instead of waiting
    (search.engine.SearchContext)."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        conn: Connection | None = None,
        wait_for_vectors: bool = True,
    ) -> None:
        self.settings = settings
        self.wait_for_vectors = wait_for_vectors
        self._conn: Connection | None = conn
        self._embedder = embedder
        self._embedder_loaded = embedder is not None

    # -- plumbing -------------------------------------------------------------------------
    def conn(self, create: bool = False) -> Connection:
        if self._conn is None:
            state = self.settings.state_dir
            if create or os.path.lexists(state):  # ours: 0700, no symlink (statedir.py)
                private_dir(state)
            self._conn = open_store(self.settings, create=create)
        return self._conn

    def embedder(self) -> Embedder | None:
        if not self._embedder_loaded:
            self._embedder = get_embedder(self.settings.embedder)
            self._embedder_loaded = True
        return self._embedder

    @property
    def model_loaded(self) -> bool:
        return self._embedder_loaded and self._embedder is not None

    def end_read(self) -> None:
        """Leave no transaction open on the connection, so that a pooled one (the daemon's)
        never holds an old snapshot of the index."""
        if self._conn is not None and self._conn.in_transaction:
            self._conn.rollback()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- search ---------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchResult:
        return self.run_query(request.query(self.settings.get("search.top_k")), request.now)

    def run_query(self, query: Query, now: dt.datetime | None = None) -> SearchResult:
        """A Query already parsed (benchmarks build their own)."""
        from ..search.engine import SearchContext, search

        ctx = SearchContext(
            self.conn(),
            self.settings,
            self.embedder,
            now=now or dt.datetime.now(),
            wait_for_vectors=self.wait_for_vectors,
        )
        result = search(ctx, query)
        warning = self.settings.trust_warning
        if warning is None:
            return result
        return replace(result, warnings=(warning, *result.warnings))

    def warm_up(self, mode: str = "hybrid") -> None:
        """Load the tokenizer's dictionary, the model and the vector matrix now (`mode`
        "fts": what a keyword search needs, in a fraction of the time), so that the first
        real search of a long-lived process (daemon, MCP server) answers warm."""
        if self.settings.has_index:
            self.search(SearchRequest.for_warm_up(mode))

    # -- writes: the core's jobs (core/jobs.py), run here and waited for ------------------
    def run(self, job: jobs.Job, progress: Progress | None = None, embed: bool = True) -> Any:
        """Run one job on this process's connection, embedding with its model if `embed`.
        Only indexing creates an index where there is none."""
        conn = self.conn(create=isinstance(job, jobs.IndexJob | jobs.IngestJob))
        return jobs.run(job, self.settings, conn, self.embedder() if embed else None, progress)

    # -- the prompt context ---------------------------------------------------------------
    def context(self, request: ContextRequest) -> Injection:
        """What the prompt hook injects for a prompt, with a reason per hit (core/context.py)."""
        from .context import find_context

        return find_context(request, self.search)

    def index(
        self, paths: Iterable[Path] = (), *, embed: bool = True, progress: Progress | None = None
    ) -> IndexReport:
        if embed and not self._embedder_loaded:
            use_bulk_threads()  # this process embeds documents in bulk: more threads
        if self.settings.get("search.bridge"):
            from ..search.lexicon import load_lexicon

            load_lexicon()  # the first use reduces JMdict (seconds): here, not in a search
        return cast(IndexReport, self.run(jobs.IndexJob(tuple(paths), embed), progress, embed))

    def ingest_session(self, path: Path, progress: Progress | None = None) -> IndexReport:
        return cast(IndexReport, self.run(jobs.IngestJob(path), progress))

    def embed_pending(self, progress: Progress | None = None) -> int:
        if self.embedder() is None:
            return 0
        return int(self.run(jobs.EmbedJob(), progress))

    def reindex(self, target: str, progress: Progress | None = None) -> ReindexReport:
        """The daemon's reindex jobs, run here and waited for."""
        report = ReindexReport(check_target(target), background=False)
        planned: list[jobs.Job] = self.run(jobs.ReindexPlan(target), embed=False)
        fts = [job for job in planned if isinstance(job, jobs.FtsJob)]
        for i, job in enumerate(planned, start=1):
            if isinstance(job, jobs.FtsJob):
                self.run(job, embed=False)
                if progress:
                    progress(i, len(fts), "fts")
            elif isinstance(job, jobs.DropVectorsJob):
                report.vectors_dropped = self.run(job, embed=False)
            else:
                report.embedded = self.embed_pending(progress)
        if fts:
            report.fts_documents = sum(len(job.doc_ids) for job in fts)
        elif target in ("all", "fts"):
            report.fts_documents = 0
        return report

    def has_pending(self, model: str) -> bool:
        """Whether any chunk still lacks a vector for `model`."""
        return jobs.has_pending(self.conn(), model)

    def rebuild_plan(self, daemon_state: str = "unknown") -> dict[str, Any]:
        """What `rebuild --apply` would do; `daemon_state` as the client sees the daemon."""
        from . import rebuild

        return rebuild.plan(self.settings, daemon_state)

    def rebuild(self, progress: Progress | None = None, *, daemon: DaemonControl) -> dict[str, Any]:
        """Rebuild beside the old index and swap it in (core/rebuild.py); `daemon` stops the
        daemon first and keeps another from starting meanwhile (client/lifecycle.py)."""
        from . import rebuild

        self.close()  # the swap replaces the file this connection reads
        return rebuild.rebuild(self.settings, progress, daemon)

    def export_index(self, file: Path) -> ExportReport:
        from .transfer import export_index

        return export_index(self.settings, file)

    def import_index(self, file: Path, *, replace: bool = False) -> ImportReport:
        from .transfer import import_index

        return import_index(self.settings, file, replace=replace)

    def init(self) -> dict[str, list[str]]:
        """Create the state dir, the DB and commented scaffolds; never overwrite a file."""
        created: list[str] = []
        kept: list[str] = []
        settings = self.settings
        private_dir(settings.state_dir)
        existed = settings.has_index
        self.conn(create=True)
        (kept if existed else created).append(settings.store_key)
        for path, text in scaffolds(settings).items():
            if path.exists():
                kept.append(str(path))
                continue
            try:
                # O_EXCL: fail rather than overwrite (or follow a link); state files 0600
                fd = (
                    open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                    if path.parent == settings.state_dir
                    else os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                )
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                created.append(str(path))
            except FileExistsError:
                kept.append(str(path))
        return {"created": created, "existing": kept}

    # -- reads ----------------------------------------------------------------------------
    def status(self) -> Status:
        index = catalog.index_status(
            self.conn(), self.settings, configured_vectors=model_name_of(self.settings.embedder)
        )
        return Status(index, {})

    def doctor(
        self, daemon: dict[str, Any] | None = None, embedder: dict[str, Any] | None = None
    ) -> DoctorReport:
        """Every check; `daemon` and `embedder` describe the daemon and its model workers
        (None: not known here)."""
        from .doctor import diagnose

        conn = self._conn  # the daemon lends one; otherwise diagnose opens the DB itself
        return diagnose(self.settings, daemon or {"state": "unknown"}, embedder, conn)

    def list_documents(self, type_: str | None = None) -> list[catalog.DocumentSummary]:
        return catalog.list_documents(self.conn(), type_)

    def tags(self) -> list[catalog.TagCount]:
        return catalog.tag_counts(self.conn())

    def info(self, ref: str) -> catalog.DocumentInfo:
        """A document by id, path relative to the root, or a path from the working dir."""
        return catalog.document_info(
            self.conn(), ref, index_root=self.settings.index_root, cwd=Path.cwd()
        )

    def get(self, ref: str) -> catalog.DocumentText:
        return catalog.document_text(
            self.conn(), ref, index_root=self.settings.index_root, cwd=Path.cwd()
        )


def known_failure(exc: BaseException, settings: Settings) -> TsmError | None:
    """The TsmError an exception from the store stands for (a full disk, a locked or corrupt
    DB), or None for a bug."""
    from ..store.failures import translate

    return translate(exc, settings.store_key)


@dataclass(frozen=True)
class Status:
    """`tsm status`: the index's part, and the parts of the services that answer for it
    (daemon, embedder, watcher, queue; the MCP server adds its own)."""

    index: catalog.IndexStatus
    services: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return self.index.as_json(self.services)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Status:
        """A status that crossed the daemon's socket."""
        names = {f.name for f in fields(catalog.IndexStatus)}
        index = {k: v for k, v in data.items() if k in names}
        index["warnings"] = tuple(index.get("warnings") or ())
        return cls(catalog.IndexStatus(**index), {k: v for k, v in data.items() if k not in names})
