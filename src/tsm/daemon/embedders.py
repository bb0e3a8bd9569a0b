"""The daemon's embedding model, in child processes (embed/worker.py): one answers queries,
one fills vectors in the background, so a long backfill batch never delays a search. This
is where the daemon owns the embedding workers, the one thing it takes from `tsm.embed`
rather than from the core."""

from __future__ import annotations

import threading
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..embed.worker import WorkerEmbedder

# The backfill worker runs at a low priority (embed/worker.py), which a busy machine starves
# for minutes; no one waits for it, so it is not failed (and never again asked) after the
# query worker's 2 minutes.
BACKFILL_LOAD_SECONDS = 3600.0


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
