"""What the daemon does for each request op. Reads run on the core borrowed from a pool of
WAL read connections; writes become the core's jobs (core/jobs.py) on the single writer
thread, and vectors are left to the backfill (daemon/writer.py)."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .. import __version__
from ..client import protocol
from ..core.jobs import DropVectorsJob, FtsJob, IndexJob, IngestJob, ReindexPlan
from ..core.reindex import ReindexReport, check_target
from ..core.request import SearchRequest
from ..errors import UserError
from . import arguments
from .freshness import SettingsGuard
from .replies import failure_reply
from .services import Services

if TYPE_CHECKING:
    from ..core.context import ContextRequest, Injection
    from ..models import SearchResult
    from .server import Server

log = logging.getLogger("tsm.daemon")


class Handlers:
    """The ops: ping, search, cli, index, ingest_session, reindex, status, doctor, shutdown."""

    def __init__(self, server: Server, *, watch: bool) -> None:
        self.server = server
        self.settings = server.settings
        self.guard = SettingsGuard(self.settings, server.shutdown, server.stopping)
        self.fingerprint = self.guard.fingerprint
        self.services = Services(self.settings, self.guard, watch=watch)
        self.requests = 0
        self.searches = 0

    def start(self, log_stream: IO[Any] | None) -> None:
        self.services.start(log_stream)

    def stop(self) -> None:
        self.services.stop()

    # -- dispatch -------------------------------------------------------------------------
    def dispatch(self, message: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        if message.get("v") != protocol.VERSION:
            return protocol.error(
                f"protocol version {message.get('v')!r} is not supported "
                f"(daemon speaks {protocol.VERSION})",
                kind="bad_version",
                hint="run `tsm restart` after upgrading tsm",
            )
        op = message.get("op")
        method = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if method is None:
            return protocol.error(f"unknown op {op!r}", kind="bad_request")
        # `cli` carries the client's environment and checks it itself (op_cli).
        if op not in ("ping", "shutdown", "cli") and not self.guard.same(message.get("config")):
            return protocol.error(
                "this daemon runs with other settings than the client",
                kind="config_mismatch",
                hint="run `tsm restart` to pick up the new settings",
            )
        args = message.get("args")
        try:
            if not isinstance(args, dict):
                raise UserError("request args must be an object")
            return protocol.ok(method(args))
        except Exception as exc:
            return failure_reply(exc, str(op), self.settings, self.server.state.logs)

    # -- ops ------------------------------------------------------------------------------
    def op_ping(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "protocol": protocol.VERSION,
            "config": self.fingerprint,
            "started_at": self.server.started,
            "warm": self.services.warm.is_set(),
        }

    def op_search(self, args: dict[str, Any]) -> dict[str, Any]:
        """A SearchRequest in its wire form; the reply is the contract's JSON of the result."""
        from ..render.json_format import search_to_dict

        return search_to_dict(self._search(SearchRequest.from_wire(args.get("request"))))

    def _search(self, request: SearchRequest) -> SearchResult:
        try:
            with self.services.local() as knowledge:
                result = knowledge.search(request)
        finally:
            self.services.searched()
        self.searches += 1
        return result

    def op_context(self, args: dict[str, Any]) -> dict[str, Any]:
        """A ContextRequest in its wire form; the reply is the injection with its reasons."""
        from ..core.context import ContextRequest

        return self._context(ContextRequest.from_wire(args.get("request"))).as_json()

    def _context(self, request: ContextRequest) -> Injection:
        try:
            with self.services.local() as knowledge:
                injection = knowledge.context(request)
        finally:
            self.services.searched()
        self.searches += 1
        return injection

    def op_cli(self, args: dict[str, Any]) -> dict[str, Any] | None:
        """A whole `tsm search` or `tsm context` command line from the thin client
        (cli/entry.py), answered as the CLI would: its stdout, stderr and exit code. None
        (the client then runs the full CLI) for any other command, or a client whose
        environment or tsm.toml gives other settings than this daemon's."""
        from .forwarded import answer_line

        line = arguments.command_line(args)
        return answer_line(line, self.guard.same, self._search, self._context)

    def op_index(self, args: dict[str, Any]) -> dict[str, Any]:
        paths = tuple(Path(p) for p in arguments.texts(args, "paths"))
        no_embed = arguments.flag(args, "no_embed")
        # Quiet with --no-embed: otherwise the writer wakes the backfill for what this wrote.
        job = IndexJob(paths, embed=False)
        report = self.services.writer.submit(job, quiet=no_embed).result()
        if not no_embed:  # also for chunks left without a vector by an earlier --no-embed
            self.services.backfill.wake()
        return self._report(asdict(report))

    def op_ingest_session(self, args: dict[str, Any]) -> dict[str, Any]:
        job = IngestJob(Path(arguments.text(args, "path")), embed=False)
        report = self.services.writer.submit(job).result()  # the writer wakes the backfill
        return self._report(asdict(report))

    def _report(self, data: dict[str, Any]) -> dict[str, Any]:
        data["embedded_in_background"] = self.settings.embedder not in ("none", "")
        return data

    def op_reindex(self, args: dict[str, Any]) -> dict[str, Any]:
        """The core's reindex jobs queued on the writer: this returns at once and searches
        go on while they run; the backfill embeds the dropped vectors again."""
        writer = self.services.writer
        report = ReindexReport(check_target(str(args.get("target"))), background=True)
        for job in writer.submit(ReindexPlan(report.target)).result():
            if isinstance(job, FtsJob):
                writer.submit(job)
                report.fts_documents = (report.fts_documents or 0) + len(job.doc_ids)
            elif isinstance(job, DropVectorsJob):
                report.vectors_dropped = writer.submit(job).result()
                self.services.backfill.wake()
        if report.target in ("all", "fts") and report.fts_documents is None:
            report.fts_documents = 0
        return asdict(report)

    def op_status(self, args: dict[str, Any]) -> dict[str, Any]:
        with self.services.local() as knowledge:
            status = knowledge.status()
        missing = status.index.chunks_without_vectors
        return replace(status, services=self.daemon_sections(missing)).as_json()

    def daemon_sections(self, missing: int | None) -> dict[str, Any]:
        daemon = {
            "state": "running",
            "pid": os.getpid(),
            "version": __version__,
            "uptime_s": round(time.time() - self.server.started, 1),
            "socket": str(self.server.state.socket),
            "requests": self.requests,
            "searches": self.searches,
            # False while the model and the vectors load: searches answer from keywords
            "warm": self.services.warm.is_set(),
            "connections": self.server.connection_stats(),
        }
        return {"daemon": daemon, **self.services.sections(missing)}

    def op_doctor(self, args: dict[str, Any]) -> dict[str, Any]:
        daemon = {"state": "running", "pid": os.getpid(), "socket": str(self.server.state.socket)}
        with self.services.local() as knowledge:
            return knowledge.doctor(daemon, self.services.embedders.status()).as_json()

    def op_shutdown(self, args: dict[str, Any]) -> dict[str, Any]:
        threading.Timer(0.05, self.server.shutdown).start()  # after the reply is sent
        return {"pid": os.getpid(), "stopping": True}
