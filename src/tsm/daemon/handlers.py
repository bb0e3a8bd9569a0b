"""What the daemon does for each request op. Searches borrow a WAL read connection from a
pool, so they never wait for the writer; writes become jobs of the single writer thread.
The embedding model runs in child processes (embed/worker.py): one answers queries, one
fills vectors in the background, so a long backfill batch never delays a search."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from .. import __version__
from ..client import protocol
from ..client.fingerprint import settings_fingerprint
from ..core.knowledge import LocalKnowledge
from ..core.reindex import ReindexReport, check_target, drop_vectors, fts_batches, rebuild_fts
from ..core.request import SearchRequest
from ..errors import TsmError, UserError
from ..store.connect import Connection, open_store
from ..store.failures import translate
from . import arguments

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..core.context import ContextRequest, Injection
    from ..embed import Embedder
    from ..embed.worker import WorkerEmbedder
    from ..models import SearchResult
    from .server import Server
    from .watch import Watcher
    from .writer import Backfill, Writer

log = logging.getLogger("tsm.daemon")
READ_POOL_SIZE = 8
# The backfill worker runs at a low priority (embed/worker.py), which a busy machine starves
# for minutes; no one waits for it, so it is not failed (and never again asked) after the
# query worker's 2 minutes.
BACKFILL_LOAD_SECONDS = 3600.0


def _error_reply(exc: TsmError) -> dict[str, Any]:
    """The protocol's error reply for an error the user may see: its message, hint and
    exit code travel to the client, which reports them as the CLI would."""
    return protocol.error(
        exc.message,
        kind=exc.kind,
        exit_code=exc.exit_code,
        hint=exc.hint,
        error_type=type(exc).__name__,
    )


class EmbedderHost:
    """The query and backfill workers. A dead worker is never restarted (no crash loop)."""

    def __init__(self, spec: str, log_stream: IO[Any] | None) -> None:
        self.spec = spec
        self._log = log_stream
        self._lock = threading.Lock()
        self.query: WorkerEmbedder | None = None
        self.docs: WorkerEmbedder | None = None
        if spec not in ("none", ""):
            from ..embed.worker import WorkerEmbedder

            self.query = WorkerEmbedder(spec, "query", stderr=log_stream)

    def model_name(self) -> str | None:
        """The vectors' model name (waits for the query worker); None without a model."""
        return None if self.query is None else self.query.name

    def for_backfill(self) -> WorkerEmbedder | None:
        with self._lock:
            if self.query is None:
                return None
            if self.docs is None:
                from ..embed.worker import WorkerEmbedder

                self.docs = WorkerEmbedder(
                    self.spec, "backfill", stderr=self._log, load_timeout=BACKFILL_LOAD_SECONDS
                )
            return self.docs

    def status(self) -> dict[str, Any]:
        workers = [w.status() for w in (self.query, self.docs) if w is not None]
        states = {w["state"] for w in workers}
        state = (
            "disabled"
            if self.query is None
            else "crashed"
            if "crashed" in states
            else "failed"
            if "failed" in states
            else "starting"
            if "starting" in states
            else "ready"
        )
        return {"state": state, "model_spec": self.spec, "workers": workers}

    def close(self) -> None:
        for worker in (self.query, self.docs):
            if worker is not None:
                worker.close()


class Handlers:
    """The ops: ping, search, index, ingest_session, reindex, status, doctor, shutdown."""

    def __init__(self, server: Server, *, watch: bool) -> None:
        self.server = server
        self.settings = server.settings
        self.fingerprint = settings_fingerprint(self.settings)
        self._want_watch = watch
        self._pool: queue.LifoQueue[Connection] = queue.LifoQueue()
        self.requests = 0
        self.searches = 0
        self.embedders: EmbedderHost
        self.writer: Writer
        self.backfill: Backfill
        self.watcher: Watcher | None = None

    def start(self, log_stream: IO[Any] | None) -> None:
        from .writer import Backfill, Writer

        self.embedders = EmbedderHost(self.settings.embedder, log_stream)
        self.writer = Writer(self.settings)  # creates and migrates the DB if needed
        self.backfill = Backfill(
            self.settings,
            self.writer,
            self.embedders.model_name,
            lambda: cast("Embedder | None", self.embedders.for_backfill()),
        )
        if self._want_watch:
            from .watch import Watcher

            # the writer wakes the backfill
            self.watcher = Watcher(self.settings, self.writer, self.still_current)
        threading.Thread(target=self._warm_up, name="tsm-warm-up", daemon=True).start()

    def _warm_up(self) -> None:
        """One throw-away search (core: LocalKnowledge.warm_up), so the first real one finds
        the tokenizer's dictionary, the vector matrix and the generic requests' vectors
        loaded."""
        started = time.perf_counter()
        try:
            with self.local() as knowledge:
                knowledge.warm_up()
        except Exception:  # an optimisation only: the real searches report real errors
            log.warning("warm-up search failed", exc_info=True)
        log.info("warm-up took %.0f ms", (time.perf_counter() - started) * 1000)

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.backfill.stop()
        self.writer.stop()
        self.embedders.close()
        while not self._pool.empty():
            self._pool.get_nowait().close()

    @contextmanager
    def reader(self) -> Iterator[Connection]:
        try:
            conn = self._pool.get_nowait()
        except queue.Empty:
            conn = open_store(self.settings)
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.rollback()
            if self._pool.qsize() < READ_POOL_SIZE:
                self._pool.put(conn)
            else:
                conn.close()

    @contextmanager
    def local(self) -> Iterator[LocalKnowledge]:
        """The core on a pooled read connection, with the query worker as its model."""
        with self.reader() as conn:
            yield LocalKnowledge(
                self.settings, embedder=cast("Embedder | None", self.embedders.query), conn=conn
            )

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
        if op not in ("ping", "shutdown", "cli") and not self.same_settings(message.get("config")):
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
        except TsmError as exc:
            return _error_reply(exc)
        except Exception as exc:
            known = translate(exc, self.settings.store_key)
            if known is not None:
                log.warning("op %s failed: %s", op, known.message)
                return _error_reply(known)
            log.exception("op %s failed", op)
            return protocol.error(
                f"daemon error in {op}: {type(exc).__name__}: {exc}",
                kind="system_error",
                hint=f"see the daemon log under {self.server.state.logs}",
            )

    def same_settings(self, fingerprint: object) -> bool:
        """Whether a client would search with this daemon's settings. If not, and tsm.toml
        changed since we started, step aside so that the next command starts a daemon with
        the new settings; a client whose own environment differs (say TSM_TOP_K=3) just
        searches in-process."""
        if fingerprint == self.fingerprint:
            return True
        from ..config import load

        try:
            current = settings_fingerprint(load(self.settings.index_root, os.environ))
        except TsmError:
            current = None  # a broken tsm.toml: keep serving with the settings we have
        if (
            current is not None
            and current != self.fingerprint
            and not self.server.stopping.is_set()
        ):
            log.info("configuration changed on disk; exiting so a fresh daemon picks it up")
            threading.Timer(0.05, self.server.shutdown).start()
        return False

    def still_current(self) -> bool:
        """Whether tsm.toml and the folders it names still give this daemon's settings, for
        work no client asked for (the watcher). Settings are checked when they are loaded: a
        content dir or sessions folder of an untrusted root that became a link out of the
        root since (a `git pull`, a checkout) was walked and read from there by the daemon
        of the settings it started with. When they differ, or tsm.toml is now broken, the
        work is not done, and on a change the daemon steps aside as for a client's."""
        from ..config import load

        try:
            current = settings_fingerprint(load(self.settings.index_root, os.environ))
        except TsmError as exc:
            log.warning("watcher: not indexing, the configuration is broken: %s", exc.message)
            return False
        if current == self.fingerprint:
            return True
        if not self.server.stopping.is_set():
            log.info("configuration changed on disk; exiting so a fresh daemon picks it up")
            threading.Timer(0.05, self.server.shutdown).start()
        return False

    # -- ops ------------------------------------------------------------------------------
    def op_ping(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "protocol": protocol.VERSION,
            "config": self.fingerprint,
            "started_at": self.server.started,
        }

    def op_search(self, args: dict[str, Any]) -> dict[str, Any]:
        """A SearchRequest in its wire form; the reply is the contract's JSON of the result."""
        from ..render.json_format import search_to_dict

        return search_to_dict(self._search(SearchRequest.from_wire(args.get("request"))))

    def _search(self, request: SearchRequest) -> SearchResult:
        with self.local() as knowledge:
            result = knowledge.search(request)
        self.searches += 1
        return result

    def op_context(self, args: dict[str, Any]) -> dict[str, Any]:
        """A ContextRequest in its wire form; the reply is the injection with its reasons."""
        from ..core.context import ContextRequest

        return self._context(ContextRequest.from_wire(args.get("request"))).as_json()

    def _context(self, request: ContextRequest) -> Injection:
        with self.local() as knowledge:
            injection = knowledge.context(request)
        self.searches += 1
        return injection

    def op_cli(self, args: dict[str, Any]) -> dict[str, Any] | None:
        """A whole `tsm search` command line from the thin client (cli/entry.py), parsed by
        the core's search grammar and answered as the CLI would: its stdout, stderr and exit
        code. None (the client then runs the full CLI) for anything but a search, or a
        client whose environment or tsm.toml gives other settings than this daemon's."""
        from ..config import load
        from .forwarded import answer

        argv, env, cwd = args.get("argv"), args.get("env"), args.get("cwd")
        if not (
            isinstance(argv, list)
            and all(isinstance(a, str) for a in argv)
            and isinstance(env, dict)
            and isinstance(cwd, str)
        ):
            raise UserError("cli args must hold argv (strings), env (object) and cwd")
        environ = {str(k): str(v) for k, v in env.items()}
        try:
            settings = load(Path(cwd), environ)
        except TsmError:
            return None  # the full CLI reports the config error itself
        if not self.same_settings(settings_fingerprint(settings)):
            return None
        tty = bool(args.get("tty"))
        stdin = args.get("stdin")
        stdin_bytes = stdin.encode("utf-8") if isinstance(stdin, str) else None
        root = str(settings.index_root)
        return answer(argv, environ, tty, self._search, root, cwd, self._context, stdin_bytes)

    def op_index(self, args: dict[str, Any]) -> dict[str, Any]:
        from ..indexing import index_paths

        paths = [Path(p) for p in arguments.texts(args, "paths")]
        no_embed = arguments.flag(args, "no_embed")
        report = self.writer.submit(
            f"index {len(paths) or 'all'} paths",
            lambda conn: index_paths(self.settings, conn, paths, embedder=None),
            quiet=no_embed,  # otherwise the writer wakes the backfill for what this wrote
        ).result()
        if not no_embed:  # also for chunks left without a vector by an earlier --no-embed
            self.backfill.wake()
        return self._report(asdict(report))

    def op_ingest_session(self, args: dict[str, Any]) -> dict[str, Any]:
        from ..indexing import ingest_session

        path = Path(arguments.text(args, "path"))
        report = self.writer.submit(
            f"ingest {path.name}", lambda conn: ingest_session(self.settings, conn, path, None)
        ).result()  # the writer wakes the backfill for the turns this wrote
        return self._report(asdict(report))

    def _report(self, data: dict[str, Any]) -> dict[str, Any]:
        data["embedded_in_background"] = self.settings.embedder not in ("none", "")
        return data

    def op_reindex(self, args: dict[str, Any]) -> dict[str, Any]:
        """The core's reindex jobs (core/reindex.py) queued on the writer: this returns at
        once and searches go on while they run."""
        target = args.get("target")
        report = ReindexReport(check_target(str(target)), background=True)
        if target in ("all", "fts"):
            batches = self.writer.submit("plan fts", fts_batches).result()
            for i, ids in enumerate(batches):
                self.writer.submit(
                    f"reindex fts {i + 1}/{len(batches)}", rebuild_fts(self.settings, ids)
                )
            report.fts_documents = sum(len(b) for b in batches)
        if target in ("all", "vectors"):
            report.vectors_dropped = self.writer.submit("drop vectors", drop_vectors).result()
            self.backfill.wake()
        return asdict(report)

    def op_status(self, args: dict[str, Any]) -> dict[str, Any]:
        with self.local() as knowledge:
            status = knowledge.status()
        missing = status.index.chunks_without_vectors
        return replace(status, services=self.daemon_sections(missing)).as_json()

    def daemon_sections(self, missing: int | None) -> dict[str, Any]:
        return {
            "daemon": {
                "state": "running",
                "pid": os.getpid(),
                "version": __version__,
                "uptime_s": round(time.time() - self.server.started, 1),
                "socket": str(self.server.state.socket),
                "requests": self.requests,
                "searches": self.searches,
                "connections": self.server.connection_stats(),
            },
            "embedder": self.embedders.status(),
            "watcher": self.watcher.status() if self.watcher else {"state": "off"},
            "queue": {
                "writer_jobs": self.writer.queue_length(),
                "current_job": self.writer.current,
                "chunks_without_vectors": missing,
                "backfill": self.backfill.status(),
            },
        }

    def op_doctor(self, args: dict[str, Any]) -> dict[str, Any]:
        daemon = {"state": "running", "pid": os.getpid(), "socket": str(self.server.state.socket)}
        with self.local() as knowledge:
            return knowledge.doctor(daemon, self.embedders.status()).as_json()

    def op_shutdown(self, args: dict[str, Any]) -> dict[str, Any]:
        threading.Timer(0.05, self.server.shutdown).start()  # after the reply is sent
        return {"pid": os.getpid(), "stopping": True}
