"""Optional backends for users with a network or their own model server:
any sentence-transformers model, and an OpenAI-compatible `/v1/embeddings` endpoint
(Ollama, LM Studio, vLLM …). Neither is installed by default."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbedderUnavailable


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


class SentenceTransformerEmbedder:
    """`st:<model name or local path>`; e5-style models get their query/passage prefixes."""

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderUnavailable(
                "sentence-transformers is not installed", "pip install 'tsm[st]'"
            ) from None
        self._model: Any = SentenceTransformer(model)
        self.name = f"st:{model}"
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self._e5 = "e5" in model.lower()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = [f"passage: {t}" for t in texts] if self._e5 else list(texts)
        return _normalise(np.asarray(self._model.encode(items), dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        item = f"query: {text}" if self._e5 else text
        return _normalise(np.asarray(self._model.encode([item]), dtype=np.float32))[0]


class OpenAICompatibleEmbedder:
    """`openai:<base url>#<model>`, e.g. `openai:http://localhost:11434/v1#nomic-embed-text`."""

    def __init__(self, url: str, model: str, timeout: float = 60.0) -> None:
        if not url or not model:
            raise EmbedderUnavailable(
                "openai embedder needs a URL and a model: openai:<url>#<model>"
            )
        self._url = url.rstrip("/") + (
            "" if url.rstrip("/").endswith("/embeddings") else "/embeddings"
        )
        self._model = model
        self._timeout = timeout
        self.name = f"openai:{model}"
        self.dim = int(self._request(["dimension probe"]).shape[1])

    def _request(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self._model, "input": texts}).encode()
        req = urllib.request.Request(self._url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                data = json.load(resp)["data"]
        except Exception as exc:
            raise EmbedderUnavailable(f"embedding endpoint {self._url} failed: {exc}") from None
        rows = [d["embedding"] for d in sorted(data, key=lambda d: d["index"])]
        return _normalise(np.asarray(rows, dtype=np.float32))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._request(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([text])[0]
