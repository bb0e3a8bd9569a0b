"""What the daemon's ops work with: the core on pooled WAL read connections (searches never
wait for the writer), the single writer thread that runs the core's jobs, the backfill, the
embedding workers and the file watcher."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, cast

from ..config import Settings
from ..core.knowledge import LocalKnowledge
from ..text.tokenizer import trim_tokenizer
from .embedders import EmbedderHost
from .freshness import SettingsGuard
from .pause import OnPause

if TYPE_CHECKING:
    from ..embed import Embedder
    from .watch import Watcher
    from .writer import Backfill, Writer

log = logging.getLogger("tsm.daemon")
READ_POOL_SIZE = 8
# A search reads scattered pages of the tokenizer's dictionary, and each page maps the whole
# page-cache folio around it into the daemon (a MiB for a file pip 26 has just written: 86 MB
# after 30 searches). They go back to the page cache once searches pause this long
# (text/tokenizer.trim_tokenizer): a burst of searches pays nothing, and the first search
# after a pause maps back what it reads, a fraction of a millisecond.
SEARCH_PAUSE_SECONDS = 1.0


class Services:
    def __init__(self, settings: Settings, guard: SettingsGuard, *, watch: bool) -> None:
        self.settings = settings
        self.guard = guard
        self._want_watch = watch
        self._pool: queue.LifoQueue[LocalKnowledge] = queue.LifoQueue()
        self.embedders: EmbedderHost
        self.writer: Writer
        self.backfill: Backfill
        self.watcher: Watcher | None = None
        # Set once the warm-up has loaded the model and the vectors (or given up): until then
        # a search does not wait for them (search.engine.SearchContext.wait_for_vectors).
        self.warm = threading.Event()
        self.searches_pause = OnPause(SEARCH_PAUSE_SECONDS, trim_tokenizer, "tsm-search-pause")

    def searched(self) -> None:
        """A search (or the warm-up's) has just read the tokenizer's dictionary."""
        self.searches_pause.touch()

    def start(self, log_stream: IO[Any] | None) -> None:
        from .writer import Backfill, Writer

        self.embedders = EmbedderHost(self.settings.embedder, log_stream)
        self.writer = Writer(self.settings)  # creates and migrates the DB if needed
        self.backfill = Backfill(
            self.settings,
            self.writer,
            self.embedders.model_name,
            lambda: cast("Embedder | None", self.embedders.for_backfill()),
            self._has_pending,
        )
        if self._want_watch:
            from .watch import Watcher

            # the writer wakes the backfill
            self.watcher = Watcher(self.settings, self.writer, self.guard.still_current)
        self._warm_keywords()
        threading.Thread(target=self._warm_up, name="tsm-warm-up", daemon=True).start()

    def _has_pending(self, model: str) -> bool:
        with self.local() as knowledge:
            return knowledge.has_pending(model)

    def _warm_keywords(self) -> None:
        """A keyword search before the daemon answers anyone: the first real search then
        finds the tokenizer's dictionary and the search code loaded, and while the model
        and the vectors load (`_warm_up`) it answers from its keywords at once."""
        started = time.perf_counter()
        try:
            with self.local(wait_for_vectors=True) as knowledge:
                knowledge.warm_up("fts")
        except Exception:  # an optimisation only: the real searches report real errors
            log.warning("keyword warm-up search failed", exc_info=True)
        log.info("keyword warm-up took %.0f ms", (time.perf_counter() - started) * 1000)

    def _warm_up(self) -> None:
        """One throw-away search (core: LocalKnowledge.warm_up), so the first real one finds
        the tokenizer's dictionary, the vector matrix and the generic requests' vectors
        loaded."""
        started = time.perf_counter()
        try:
            with self.local(wait_for_vectors=True) as knowledge:
                knowledge.warm_up()
        except Exception:  # an optimisation only: the real searches report real errors
            log.warning("warm-up search failed", exc_info=True)
        finally:
            self.warm.set()
            self.searched()
        log.info("warm-up took %.0f ms", (time.perf_counter() - started) * 1000)

    def stop(self) -> None:
        self.searches_pause.close()
        if self.watcher is not None:
            self.watcher.stop()
        self.backfill.stop()
        self.writer.stop()
        self.embedders.close()
        while not self._pool.empty():
            self._pool.get_nowait().close()

    @contextmanager
    def local(self, wait_for_vectors: bool | None = None) -> Iterator[LocalKnowledge]:
        """The core on a pooled read connection, with the query worker as its model; its
        searches wait for the model and the vectors once the warm-up has loaded them."""
        try:
            knowledge = self._pool.get_nowait()
        except queue.Empty:
            model = cast("Embedder | None", self.embedders.query)
            knowledge = LocalKnowledge(self.settings, embedder=model)
            knowledge.conn()  # opened here, so a missing index fails this request alone
        knowledge.wait_for_vectors = (
            self.warm.is_set() if wait_for_vectors is None else wait_for_vectors
        )
        try:
            yield knowledge
        finally:
            knowledge.end_read()
            if self._pool.qsize() < READ_POOL_SIZE:
                self._pool.put(knowledge)
            else:
                knowledge.close()

    def sections(self, missing: int | None) -> dict[str, Any]:
        """The embedder, watcher and queue parts of `tsm status`."""
        return {
            "embedder": self.embedders.status(),
            "watcher": self.watcher.status() if self.watcher else {"state": "off"},
            "queue": {
                "writer_jobs": self.writer.queue_length(),
                "current_job": self.writer.current,
                "chunks_without_vectors": missing,
                "backfill": self.backfill.status(),
            },
        }
