"""The daemon's embedding model, in child processes (embed/worker.py): one answers queries,
one fills vectors in the background, so a long backfill batch never delays a search. This
is where the daemon owns the embedding workers, the one thing it takes from `tsm.embed`
rather than from the core."""

from __future__ import annotations

import logging
import os
import threading
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..embed.worker import WorkerEmbedder

# The backfill worker runs at a low priority (embed/worker.py), which a busy machine starves
# for minutes; no one waits for it, so it is not failed (and never again asked) after the
# query worker's 2 minutes.
BACKFILL_LOAD_SECONDS = 3600.0
# Once the backlog is done, the backfill worker (a second copy of the model) is closed after
# this long without work (TSM_BACKFILL_IDLE_SECONDS); new chunks start it again.
BACKFILL_IDLE_SECONDS = 60.0
log = logging.getLogger("tsm.daemon")


class EmbedderHost:
    """The query and backfill workers. A dead worker is never restarted (no crash loop)."""

    def __init__(self, spec: str, log_stream: IO[Any] | None) -> None:
        self.spec = spec
        self._log = log_stream
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.idle_seconds = float(
            os.environ.get("TSM_BACKFILL_IDLE_SECONDS") or BACKFILL_IDLE_SECONDS
        )
        self.query: WorkerEmbedder | None = None
        self.docs: WorkerEmbedder | None = None
        if spec not in ("none", ""):
            from ..embed.worker import WorkerEmbedder

            self.query = WorkerEmbedder(spec, "query", stderr=log_stream)
            threading.Thread(target=self._release_idle, name="tsm-embed-idle", daemon=True).start()

    def _release_idle(self) -> None:
        """Close the backfill worker once it has had no work for `idle_seconds`."""
        while not self._closing.wait(min(10.0, max(0.1, self.idle_seconds / 4))):
            with self._lock:
                if self.docs is not None and self.docs.close_if_idle(self.idle_seconds):
                    log.info("backfill worker %s closed after its idle time", self.docs.pid)
                    self.docs = None

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
        self._closing.set()
        for worker in (self.query, self.docs):
            if worker is not None:
                worker.close()
