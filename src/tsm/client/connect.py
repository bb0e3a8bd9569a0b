"""`connect()`: the Knowledge a caller should use. The daemon when one of ours answers (it
holds the warm model and vectors, and is the only writer while it runs); the in-process
core otherwise, or as soon as the daemon fails to answer. This is the one place that falls
back: a daemon that is down, restarting or configured differently never makes a command
fail."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import lifecycle
from .remote import RemoteKnowledge, Unavailable

if TYPE_CHECKING:
    from ..config import Settings
    from ..core.context import ContextRequest, Injection
    from ..core.doctor import DoctorReport
    from ..core.knowledge import Knowledge, LocalKnowledge, Status
    from ..core.reindex import ReindexReport
    from ..core.request import SearchRequest
    from ..core.transfer import ExportReport, ImportReport
    from ..indexing import IndexReport, Progress
    from ..models import SearchResult
    from ..store.catalog import DocumentInfo, DocumentSummary, DocumentText, TagCount

T = TypeVar("T")


class Client:
    """A Knowledge that asks the daemon and falls back to the in-process core.

    `autostart`: start a daemon when none runs (searches do, when an index exists; the
    first search waits at most AUTOSTART_WAIT for it and otherwise runs in-process).
    Reads that need no model (list, tags, info, get), export and import, and the rebuild
    (which stops the daemon) are always answered in-process: the same store, without a
    round trip."""

    def __init__(
        self,
        settings: Settings,
        *,
        autostart: bool = False,
        make_local: Callable[[], LocalKnowledge] | None = None,
    ) -> None:
        self.settings = settings
        self._autostart = autostart
        self._make_local = make_local  # the in-process core, when the caller builds its own
        self._remote: RemoteKnowledge | None = None
        self._probed = False
        self._local: LocalKnowledge | None = None
        self.foreign_daemon = False  # another user's process holds our socket

    # -- choosing -------------------------------------------------------------------------
    def daemon(self) -> RemoteKnowledge | None:
        """The daemon's Knowledge when one of ours answers (started first if asked)."""
        if not self._probed:
            self._probed = True
            found = lifecycle.probe(self.settings)
            self.foreign_daemon = found == "foreign"
            if found == "ours" or (
                found == "none"
                and self._autostart
                and _started(self.settings, lifecycle.AUTOSTART_WAIT)
            ):
                self._remote = RemoteKnowledge(self.settings)
        return self._remote

    def local(self) -> LocalKnowledge:
        if self._local is None:
            if self._make_local is not None:
                self._local = self._make_local()
            else:
                from ..core.knowledge import LocalKnowledge

                self._local = LocalKnowledge(self.settings)
        return self._local

    def _either(
        self, remote: Callable[[RemoteKnowledge], T], local: Callable[[LocalKnowledge], T]
    ) -> T:
        daemon = self.daemon()
        if daemon is not None:
            try:
                return remote(daemon)
            except Unavailable:  # down, restarting or configured otherwise: in-process
                self._remote, self._probed, self._autostart = None, False, False
        return local(self.local())

    @property
    def remote(self) -> bool:
        """Whether the daemon answers this client's operations."""
        return self.daemon() is not None

    @property
    def model_loaded(self) -> bool:
        """Whether this process loaded an embedding model (the in-process core did)."""
        return self._local is not None and self._local.model_loaded

    # -- the operations -------------------------------------------------------------------
    def search(self, request: SearchRequest) -> SearchResult:
        return self._either(lambda k: k.search(request), lambda k: k.search(request))

    def context(self, request: ContextRequest) -> Injection:
        return self._either(lambda k: k.context(request), lambda k: k.context(request))

    def index(
        self, paths: Iterable[Path] = (), *, embed: bool = True, progress: Progress | None = None
    ) -> IndexReport:
        paths = list(paths)
        from ..sources.files import storable

        if not all(storable(str(p)) for p in paths):  # the protocol carries Unicode only
            return self.local().index(paths, embed=embed, progress=progress)
        return self._either(
            lambda k: k.index(paths, embed=embed),
            lambda k: k.index(paths, embed=embed, progress=progress),
        )

    def ingest_session(self, path: Path, progress: Progress | None = None) -> IndexReport:
        from ..sources.files import storable

        # A missing file is reported by the in-process path, as is an undecodable name.
        if not (path.is_file() and storable(str(path))):
            return self.local().ingest_session(path, progress)
        return self._either(
            lambda k: k.ingest_session(path), lambda k: k.ingest_session(path, progress)
        )

    def reindex(self, target: str, progress: Progress | None = None) -> ReindexReport:
        return self._either(lambda k: k.reindex(target), lambda k: k.reindex(target, progress))

    def status(self) -> Status:
        return self._either(lambda k: k.status(), self._local_status)

    def doctor(self) -> DoctorReport:
        return self._either(
            lambda k: k.doctor(),
            lambda k: k.doctor(lifecycle.daemon_state(self.settings), None),
        )

    def rebuild(self, progress: Progress | None = None) -> dict[str, Any]:
        """Stop the daemon, rebuild beside the old index, swap it in (core/rebuild.py)."""
        return self.local().rebuild(progress, daemon=lifecycle.Lifecycle(self.settings))

    def rebuild_plan(self) -> dict[str, Any]:
        return self.local().rebuild_plan(lifecycle.daemon_state(self.settings)["state"])

    def export_index(self, file: Path) -> ExportReport:
        """In-process: it reads the store as it is, with or without a daemon."""
        return self.local().export_index(file)

    def import_index(self, file: Path, *, replace: bool = False) -> ImportReport:
        return self.local().import_index(file, replace=replace)

    def init(self) -> dict[str, list[str]]:
        return self.local().init()

    def list_documents(self, type_: str | None = None) -> list[DocumentSummary]:
        return self.local().list_documents(type_)

    def tags(self) -> list[TagCount]:
        return self.local().tags()

    def info(self, ref: str) -> DocumentInfo:
        return self.local().info(ref)

    def get(self, ref: str) -> DocumentText:
        return self.local().get(ref)

    def warm_up(self) -> None:
        """Make the next search answer warm, starting nothing that outlives this process: a
        daemon that runs warms itself; when none runs and the first search would start one,
        that search starts it (a client that connects and leaves, as `claude mcp list`
        does, leaves no daemon behind), and loading the model here too would hold it
        twice; otherwise load the model and vectors in-process now."""
        if not self._probed and self._autostart and lifecycle.probe(self.settings) == "none":
            return
        if self.daemon() is None:
            self.local().warm_up()

    def close(self) -> None:
        if self._local is not None:
            self._local.close()

    def _local_status(self, local: LocalKnowledge) -> Status:
        """The index's status, with the daemon's parts said plainly when none answers."""
        status = local.status()
        services = {
            "daemon": lifecycle.daemon_state(self.settings),
            "embedder": {"state": "not loaded (no daemon)", "model_spec": self.settings.embedder},
            "watcher": {"state": "off (no daemon)"},
            "queue": {
                "writer_jobs": 0,
                "chunks_without_vectors": status.index.chunks_without_vectors,
            },
        }
        return replace(status, services=services)


def _started(settings: Settings, wait: float) -> bool:
    from ..errors import TsmError

    try:
        return lifecycle.ensure_started(settings, wait)
    except (OSError, TsmError):  # `tsm start` says why; a search just runs in-process
        return False


def connect(
    settings: Settings,
    *,
    searching: bool = False,
    make_local: Callable[[], LocalKnowledge] | None = None,
) -> Client:
    """A Client. `searching`: it will search, so it starts a daemon when none runs, if
    `daemon.autostart` is on and the index exists (a daemon never creates an index).
    `make_local`: builds its in-process core (the MCP server's threads share one model)."""
    autostart = searching and bool(settings.get("daemon.autostart")) and settings.has_index
    return Client(settings, autostart=autostart, make_local=make_local)


if TYPE_CHECKING:

    def _every_operation(client: Client) -> Knowledge:
        """mypy's check that the client answers every operation of the core."""
        return client
