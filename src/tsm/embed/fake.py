"""A deterministic embedder for unit tests of ranking logic: hashed character trigrams, so
texts sharing words get similar vectors. Never the default."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


class FakeEmbedder:
    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"fake-{dim}"

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        text = text.lower()
        for i in range(max(1, len(text) - 2)):
            digest = hashlib.blake2b(text[i : i + 3].encode(), digest_size=4).digest()
            vec[int.from_bytes(digest, "little") % self.dim] += 1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return (
            np.stack([self._one(t) for t in texts])
            if texts
            else np.zeros((0, self.dim), dtype=np.float32)
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)
