"""Tokenizer: Japanese morphological terms, NFKC + case folding, stopwords, FTS5 round trip."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tsm.search.fts import match_expression
from tsm.text.tokenizer import (
    _JA_RUN,
    ENGLISH_STOPWORDS,
    JapaneseTokenizer,
    get_tokenizer,
    normalize,
)


@pytest.fixture(scope="module")
def tok() -> JapaneseTokenizer:
    return get_tokenizer()


def test_compound_is_found_by_its_parts(tok: JapaneseTokenizer) -> None:
    terms = tok.query_terms("狩猟免許を取得した")
    assert "狩猟" in terms
    assert "免許" in terms
    assert "取得" in terms


def test_katakana_compound(tok: JapaneseTokenizer) -> None:
    assert tok.query_terms("捕獲報告アプリ") == ["捕獲", "報告", "アプリ"]


@pytest.mark.parametrize("particle", ["を", "は", "が", "の", "で", "に", "と", "も"])
def test_particles_are_dropped(tok: JapaneseTokenizer, particle: str) -> None:
    terms = tok.query_terms("私は東京で狩猟をします。鹿の罠に鳥と猪も")
    assert particle not in terms
    assert {"東京", "狩猟", "鹿", "罠"} <= set(terms)


def test_auxiliaries_and_punctuation_are_dropped(tok: JapaneseTokenizer) -> None:
    terms = tok.query_terms("鹿を捕獲しました。「罠」、です！")
    assert terms[:2] == ["鹿", "捕獲"]
    for noise in ("ました", "まし", "た", "です", "。", "「", "」", "、", "！"):
        assert noise not in terms


def test_inflected_verbs_use_the_normalized_form(tok: JapaneseTokenizer) -> None:
    assert "作る" in tok.query_terms("罠を作った")
    assert "作る" in tok.index_text("罠を作っている").split()


def test_full_width_latin_is_normalised(tok: JapaneseTokenizer) -> None:
    assert tok.query_terms("ＬｏＲａ") == ["lora"]
    assert tok.query_terms("ＬｏＲａモジュール") == ["lora", "モジュール"]
    assert tok.index_text("ＬｏＲａ") == "lora"
    assert normalize("ＧＩＴ　１２３") == "git 123"


def test_english_is_case_folded_and_stopwords_dropped(tok: JapaneseTokenizer) -> None:
    terms = tok.query_terms("How do I install The Quick Brown Fox on a Raspberry Pi?")
    assert terms == ["install", "quick", "brown", "fox", "raspberry", "pi"]
    assert not set(terms) & ENGLISH_STOPWORDS


def test_only_stopwords_gives_no_terms(tok: JapaneseTokenizer) -> None:
    assert tok.query_terms("the of and") == []
    assert tok.query_terms("") == []
    assert tok.query_terms("   ") == []


def test_query_terms_are_distinct_and_ordered(tok: JapaneseTokenizer) -> None:
    assert tok.query_terms("git Git GIT 狩猟 狩猟 lora") == ["git", "狩猟", "lora"]


def test_index_text_leaves_latin_text_for_fts5(tok: JapaneseTokenizer) -> None:
    # Case-folded but not split, stemmed or stripped of stopwords: FTS5's own tokenizer does that.
    assert tok.index_text("The Running Dogs, don't they?") == "the running dogs, don't they?"


def test_index_text_splits_japanese_runs(tok: JapaneseTokenizer) -> None:
    assert tok.index_text("狩猟免許を取得した").split() == ["狩猟", "免許", "取得", "為る"]


def test_mixed_japanese_and_english(tok: JapaneseTokenizer) -> None:
    assert tok.query_terms("Gitのinstall手順") == ["git", "install", "手順"]
    assert tok.index_text("Gitのinstall手順").split() == ["git", "install", "手順"]


def test_long_japanese_run_is_tokenized(tok: JapaneseTokenizer) -> None:
    run = "狩猟免許を取得した。" * 600  # 6,000 characters: longer than one analyzer call
    terms = tok.index_text(run).split()
    assert terms.count("狩猟") == 600


def test_get_tokenizer_is_shared() -> None:
    assert get_tokenizer() is get_tokenizer()


@pytest.fixture
def fts(tok: JapaneseTokenizer) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    docs = [
        "狩猟免許を取得した",
        "捕獲報告アプリを作った",
        "ＬｏＲａモジュールの設定",
        "Gitのinstall手順",
        "Mirror every repository nightly",
        "İstanbul ferries cross at night",
    ]
    conn.executemany(
        "INSERT INTO t(rowid, body) VALUES (?, ?)",
        [(i, tok.index_text(d)) for i, d in enumerate(docs, 1)],
    )
    yield conn
    conn.close()


@pytest.mark.parametrize(
    ("query", "rowid"),
    [
        ("狩猟", 1),
        ("免許", 1),
        ("報告", 2),
        ("アプリを作る", 2),
        ("lora", 3),
        ("LoRa", 3),
        ("git install", 4),
        ("インストール手順", 4),
        ("mirrors repositories", 5),  # porter stemming on both sides
        ("İstanbul", 6),  # lower() gives i and a combining dot, which split the word
        ("istanbul", 6),
    ],
)
def test_query_terms_find_index_text_in_fts5(
    tok: JapaneseTokenizer, fts: sqlite3.Connection, query: str, rowid: int
) -> None:
    expr = match_expression(tok.query_terms(query))
    assert expr is not None
    rows = fts.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank", (expr,)).fetchall()
    assert rows and rows[0][0] == rowid


def test_a_new_thread_reuses_a_loaded_dictionary() -> None:
    """The daemon answers each connection on a new thread: loading a Sudachi dictionary
    there cost ~36 ms per Japanese query. Threads borrow an idle analyzer instead."""
    import threading

    tok = JapaneseTokenizer()
    tok.ja_terms("狩猟")
    used: list[int] = []

    def borrow() -> None:
        with tok._analyzer() as analyzer:
            used.append(id(analyzer))

    for _ in range(3):
        thread = threading.Thread(target=borrow)
        thread.start()
        thread.join()
    assert len(set(used)) == 1


def test_concurrent_threads_each_get_their_own_analyzer() -> None:
    """SudachiPy refuses concurrent use of one tokenizer: eight threads at once still get
    the right terms (the pool grows to what is used at the same time)."""
    import threading

    tok = JapaneseTokenizer()
    failures: list[object] = []

    def work() -> None:
        try:
            for _ in range(30):
                assert tok.ja_terms("東京都庁の狩猟免許") == ["東京", "都庁", "狩猟", "免許"]
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def _dictionary_maps() -> int:
    maps = Path("/proc/self/maps").read_text()
    return sum(1 for line in maps.splitlines() if line.endswith("system.dic"))


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_release_unmaps_the_dictionary_and_the_next_call_loads_it_again() -> None:
    """A process about to embed a vault hands the dictionary's pages back."""
    gc.collect()
    before = _dictionary_maps()
    tok = JapaneseTokenizer()
    assert tok.ja_terms("境界層の研究") == tok.ja_terms("境界層の研究")
    assert _dictionary_maps() > before
    tok.release()
    gc.collect()
    assert _dictionary_maps() == before
    assert "境界" in tok.ja_terms("境界層の研究")


def _terms_by_the_definition(run: str) -> list[str]:
    """What the analyzer's terms are, spelled out plainly: every SudachiPy morpheme (split
    mode A) whose part of speech carries a topic and whose surface holds a letter or digit,
    by its normalized form."""
    from sudachipy import Dictionary, SplitMode

    analyzer = Dictionary(dict="core").tokenizer(mode=SplitMode.A)
    return [
        m.normalized_form()
        for start in range(0, len(run), 2000)
        for m in analyzer.tokenize(run[start : start + 2000])
        if m.part_of_speech()[0] not in {"助詞", "助動詞", "補助記号", "空白"}
        and any(c.isalnum() for c in m.surface())
    ]


@pytest.mark.parametrize(
    "run",
    [
        "東京都に行ったが、作っているものは見せなかった",
        "ボブ・ディランとジョン・レノン",  # a middle dot between words
        "・・・ー゛゜",  # marks alone
        "ヶ月々〆切",
        "狩猟免許を取得した" * 400,  # past the analyzer's input limit: cut into pieces
    ],
)
def test_lean_terms_match_the_definition(tok: JapaneseTokenizer, run: str) -> None:
    assert tok.ja_terms(run) == _terms_by_the_definition(run)
    by_definition = _JA_RUN.sub(
        lambda m: " " + " ".join(_terms_by_the_definition(m.group())) + " ", normalize(run)
    )
    assert tok.index_text(run) == by_definition


def test_one_analyzer_serves_every_run_of_a_text(tok: JapaneseTokenizer) -> None:
    text = "狩猟は楽しい。 LoRa で 無線を 使う、センサー・モジュール"
    pieces = [tok.index_text(part) for part in text.split(" ")]
    assert tok.index_text(text).split() == " ".join(pieces).split()


def test_english_text_loads_no_dictionary() -> None:
    tok = JapaneseTokenizer()
    assert tok.index_text("The LoRa tracker, tested in the field.") == (
        "the lora tracker, tested in the field."
    )
    assert tok._idle == []  # no analyzer was made: the dictionary's pages stay unmapped
    tok.index_text("狩猟の記録")
    assert len(tok._idle) == 1
