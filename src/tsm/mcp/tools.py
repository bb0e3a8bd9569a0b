"""What each MCP tool does, with no MCP SDK in sight: one call on the core per tool (through
the daemon when one runs, so one resident process holds the model and the vectors), the
result as the CLI's JSON (the structured content) plus a short text for clients that show a
model only the text. Errors stay TsmError; server.py turns them into tool errors."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from ..client.connect import Client, connect
from ..config import Settings
from ..core.outline import section_starts
from ..core.request import from_tool_arguments
from ..core.shared_model import SharedModel, SharedModelKnowledge
from ..errors import UserError
from ..models import DOCUMENT_TYPES
from .excerpt import DEFAULT_MAX_CHARS, by_lines, section_lines, split_lines
from .outbound import Outbound

log = logging.getLogger("tsm.mcp")
T = TypeVar("T")


@dataclass(frozen=True)
class Reply:
    """A tool's answer: `data` becomes structuredContent, `text` the text content block."""

    data: dict[str, Any]
    text: str


class Tools:
    """The core's client for the life of the server: it asks the daemon when one runs
    (started on demand, as a search does, when `daemon.autostart` is on and the index
    exists), so the model and the vector matrix stay warm in one process; without a daemon
    the core runs here and stays warm itself.

    Calls run on `workers` dedicated threads (stdio: one, in order; HTTP: several, so that
    one client's search never waits for another's). Each thread has a Client of its own,
    hence its own connection to the index (neither an SQLite connection nor one psycopg
    connection serves two searches at once), and every thread's in-process core shares one
    model (SharedModel). The first search on a thread that never searched costs 30-80 ms
    more (measured at 10,000 notes), so the warm-up runs on every thread."""

    def __init__(self, settings: Settings, *, workers: int = 1) -> None:
        self.settings = settings
        self.workers = workers
        # What the tools return lands in a model's context: cleaned (outbound.py).
        self.outbound = Outbound(secrets=bool(settings.get("mcp.redact")))
        self.model = SharedModel(settings.embedder)
        self._clients: list[Client] = []
        self._clients_lock = threading.Lock()
        self._mine = threading.local()
        self._thread = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tsm-core")
        self._started = time.time()
        self.warmup_ms: float | None = None
        self.transport = "stdio"

    @property
    def client(self) -> Client:
        """This thread's Client (made on its first call)."""
        client: Client | None = getattr(self._mine, "client", None)
        if client is None:
            client = connect(
                self.settings,
                searching=True,
                make_local=lambda: SharedModelKnowledge(self.settings, self.model),
            )
            self._mine.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    # -- tools ----------------------------------------------------------------------------
    def search(self, arguments: Mapping[str, Any]) -> Reply:
        """Exactly `tsm search -f json`: the same request, core and serialiser; the
        arguments are named as each request field's `mcp` declares (core/request.py)."""
        from ..render.human_format import search_text
        from ..render.json_format import search_to_dict

        request = from_tool_arguments(arguments)
        result = self.outbound.value(self._run(lambda: self.client.search(request)))
        return Reply(search_to_dict(result), search_text(result))

    def get(
        self,
        path: str | None = None,
        doc_id: int | None = None,
        *,
        start_line: int | None = None,
        end_line: int | None = None,
        section: str | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> Reply:
        """A document's metadata and text, or the part of it that was asked for."""
        if (path is None) == (doc_id is None):
            raise UserError(
                "give exactly one of path or id",
                "path as shown in search results' source.path, e.g. notes/git.md",
            )
        if section is not None and (start_line is not None or end_line is not None):
            raise UserError("give either section or start_line/end_line, not both")
        ref = str(doc_id) if doc_id is not None else str(path)
        raw = self._run(lambda: self.client.get(ref)).as_json()
        # Cleaned whole before a range is cut (a range can cut a key short), keeping its lines.
        text: str = self.outbound.text(raw.pop("text"), keep_lines=True)
        doc = self.outbound.value(raw)
        if section is None:
            excerpt = by_lines(text, start_line, end_line, max_chars)
        else:
            total = len(split_lines(text))
            if doc["type"] != "markdown":
                raise UserError(
                    f"section selection works for Markdown documents; "
                    f"{doc['path']} is {doc['type']}",
                    f"use start_line/end_line (it has {total} lines)",
                )
            name, first, last = section_lines(section_starts(doc["path"], text), total, section)
            excerpt = by_lines(text, first, last, max_chars, section=name)
        data = {**doc, "text": excerpt.text, **excerpt.as_json()}
        return Reply(data, _document_text(data))

    def list_documents(
        self,
        type_: str | None = None,
        path_prefix: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> Reply:
        """`tsm list`, paged: 10,000 rows would swamp a model's context."""
        from ..render.human_format import table

        if type_ is not None and type_ not in DOCUMENT_TYPES:
            raise UserError(f"unknown type {type_!r}", "use " + ", ".join(DOCUMENT_TYPES))
        if limit < 1 or offset < 0:
            raise UserError("limit must be >= 1 and offset >= 0")
        docs = self.outbound.value(
            [d.as_json() for d in self._run(lambda: self.client.list_documents(type_))]
        )
        if path_prefix:
            prefix = path_prefix.removeprefix("./").rstrip("/")
            docs = [d for d in docs if d["path"] == prefix or d["path"].startswith(prefix + "/")]
        page = docs[offset : offset + limit]
        data = {"documents": page, "total": len(docs), "returned": len(page), "offset": offset}
        shown = f"{len(docs)} documents" + (
            f", showing {offset + 1}-{offset + len(page)}" if len(page) < len(docs) else ""
        )
        return Reply(
            data, shown + "\n" + table(page, ("id", "type", "date", "path", "title", "tags"))
        )

    def list_tags(self, limit: int = 200) -> Reply:
        """`tsm tags`: most used first."""
        from ..render.human_format import table

        if limit < 1:
            raise UserError("limit must be >= 1")
        tags = self.outbound.value([t.as_json() for t in self._run(lambda: self.client.tags())])
        data = {"tags": tags[:limit], "total": len(tags), "returned": min(limit, len(tags))}
        return Reply(data, f"{len(tags)} tags\n" + table(tags[:limit], ("name", "count")))

    def status(self) -> Reply:
        """`tsm status`'s index part, plus this server's own state."""
        from ..render.human_format import mapping

        status, remote = self._run(lambda: (self.client.status(), self.client.remote))
        data = self.outbound.value(status.as_json())
        data["server"] = {
            "pid": os.getpid(),
            "transport": self.transport,
            "warm": self.warmup_ms is not None,
            "through_daemon": remote,
            # Whether this process loaded an embedding model (never, while a daemon answers).
            "model_loaded": self.model.loaded,
            "workers": self.workers,
            "warmup_ms": self.warmup_ms,
            "uptime_s": round(time.time() - self._started, 1),
        }
        return Reply(data, mapping(data))

    # -- lifecycle ------------------------------------------------------------------------
    def _run(self, operation: Callable[[], T]) -> T:
        """Run on one of the core's threads and wait; exceptions propagate to the caller."""
        return self._thread.submit(operation).result()

    def warm_up(self) -> Future[None]:
        """Queue one throw-away search per thread so the model, tokenizer, vector matrix and
        every core thread are ready before the client's first question, which queues behind
        them. The threads meet at a barrier, so each warm-up runs on a thread of its own."""
        barrier = threading.Barrier(self.workers)
        done: Future[None] = Future()
        started = time.perf_counter()
        pending = [self._thread.submit(self._warm_up, barrier) for _ in range(self.workers)]

        def finished(_: Future[None]) -> None:
            if all(f.done() for f in pending) and not done.done():
                self.warmup_ms = round((time.perf_counter() - started) * 1000, 1)
                log.info("warm-up took %.0f ms on %d threads", self.warmup_ms, self.workers)
                done.set_result(None)

        for future in pending:
            future.add_done_callback(finished)
        return done

    def _warm_up(self, barrier: threading.Barrier) -> None:
        try:
            barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass  # a thread missing at the meeting: warm this one anyway
        try:
            if not self.settings.has_index:
                log.warning("no index at %s yet; run `tsm index`", self.settings.store_key)
                return
            self.client.warm_up()
        except Exception:  # warm-up is an optimisation: the real search reports errors
            log.warning("warm-up failed", exc_info=True)

    def close(self) -> None:
        self._thread.shutdown()
        with self._clients_lock:
            for client in self._clients:
                client.close()
            self._clients.clear()


def _document_text(data: dict[str, Any]) -> str:
    where = data["path"] + (f" > {data['section']}" if data.get("section") else "")
    lines = [
        f"{data['title']} — {where}",
        f"lines {data['start_line']}-{data['end_line']} of {data['total_lines']}",
    ]
    facts = [
        f"{k}: {', '.join(v) if isinstance(v, list) else v}"
        for k, v in (
            ("type", data["type"]),
            ("date", data.get("date")),
            ("status", data.get("status")),
            ("tags", data.get("tags")),
        )
        if v
    ]
    lines.append("; ".join(facts))
    lines.append("")
    lines.append(data["text"])
    if data.get("truncated"):
        lines.append(
            f"[truncated: call get again with start_line={data['next_start_line']} to read on]"
        )
    return "\n".join(lines)
