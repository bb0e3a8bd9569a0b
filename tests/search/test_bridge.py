"""The bilingual keyword bridge: the real JMdict lexicon (jamdict-data) and the real CLI on a
small vault of English and Japanese notes, keyword search only (no model needed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tsm.search.bridge import MAX_GROUPS, bridge_expression, bridge_groups, synonym_groups
from tsm.search.lexicon import Lexicon, build, load_lexicon, normalize_gloss
from tsm.text.tokenizer import get_tokenizer

NOTES = {
    "notes/aero.md": "# Shock waves\n\nA shock wave thickens the boundary layer on the wing.\n",
    "notes/bread.md": "# Bread\n\nKnead the dough for ten minutes, then let it rest.\n",
    "notes/cells.md": "# 細胞\n\n細胞の中のタンパク質は遺伝子から作られる。\n",
}


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    found = load_lexicon()
    assert found is not None, "jamdict-data is a dependency: pip install -e ."
    return found


def sources(groups: list[Any]) -> dict[str, tuple[str, ...]]:
    return {g.source: g.translations for g in groups}


def test_multi_word_terms_translate_whole_both_ways(lexicon: Lexicon) -> None:
    assert lexicon.english("境界層") == ["boundary layer"]
    assert lexicon.japanese("shock wave")[0] == "衝撃波"
    tokenizer = get_tokenizer()
    ja = sources(bridge_groups("境界層の厚さは衝撃波で増えた", tokenizer, lexicon))
    assert ja["境界層"] == ("boundary layer",) and ja["衝撃波"] == ("shock wave",)
    assert "境界" not in ja and "層" not in ja  # not split into "boundary" + "layer"
    en = sources(
        bridge_groups("How does a shock wave change the boundary layer?", tokenizer, lexicon)
    )
    # Japanese translations are phrases of the index's own terms (Sudachi, split mode A).
    assert en["shock wave"][0] == "衝撃 波" and en["boundary layer"] == ("境界 層",)


def test_groups_keep_one_source_word_per_group(lexicon: Lexicon) -> None:
    groups = bridge_groups("pressure pressure cells", get_tokenizer(), lexicon)
    assert [g.source for g in groups] == ["pressure", "cells"]  # plural found as "cell"
    expression = bridge_expression(groups)
    assert expression is not None and expression.count("(") == 2


def test_what_the_lexicon_cannot_translate_gives_no_group(lexicon: Lexicon) -> None:
    tokenizer = get_tokenizer()
    assert bridge_groups("Ωμέγα κείμενο 1998 x", tokenizer, lexicon) == []
    assert bridge_groups("the of and", tokenizer, lexicon) == []
    assert bridge_expression([]) is None
    long = bridge_groups(" ".join(["protein cell gene wave"] * 50), tokenizer, lexicon)
    assert 0 < len(long) <= MAX_GROUPS


def test_glosses_are_reduced_to_the_phrase_a_note_contains() -> None:
    assert normalize_gloss("(to) accelerate (esp. a vehicle)") == "accelerate"
    assert normalize_gloss("the Shock Wave") == "shock wave"


def test_build_writes_a_complete_file_or_nothing(tmp_path: Path) -> None:
    """A tiny database of JMdict's schema (as jamdict-data ships it) reduced end to end."""
    src = tmp_path / "jmdict.db"
    with sqlite3.connect(src) as db:
        db.executescript("""
            CREATE TABLE Kanji (ID INTEGER PRIMARY KEY, idseq INTEGER, text TEXT);
            CREATE TABLE Kana (ID INTEGER PRIMARY KEY, idseq INTEGER, text TEXT, nokanji);
            CREATE TABLE Sense (ID INTEGER PRIMARY KEY, idseq INTEGER);
            CREATE TABLE SenseGloss (sid INTEGER, lang TEXT, gend TEXT, text TEXT);
            CREATE TABLE misc (sid INTEGER, text TEXT);
            CREATE TABLE KJP (kid INTEGER, text TEXT);
            CREATE TABLE KNP (kid INTEGER, text TEXT);
            INSERT INTO Kanji VALUES (1, 10, '衝撃波');
            INSERT INTO Kana VALUES (1, 10, 'しょうげきは', 0);
            INSERT INTO Sense VALUES (100, 10), (101, 10);
            INSERT INTO SenseGloss VALUES (100, 'eng', '', 'shock wave'),
                                          (101, 'eng', '', 'blast (archaic)');
            INSERT INTO misc VALUES (101, 'archaism');
            INSERT INTO KJP VALUES (1, 'news1');
        """)
    target = tmp_path / "cache" / "lexicon.sqlite"
    build(src, target)
    lex = Lexicon(target)
    assert lex.english("衝撃波") == ["shock wave"]  # the archaic sense is left out
    assert lex.japanese("shock wave") == ["衝撃波"] and lex.japanese("blast") == []
    assert lex.english("しょうげきは") == []  # kana is a key only for words written in kana
    assert [p.name for p in target.parent.iterdir()] == ["lexicon.sqlite"]  # no temp left
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database")
    with pytest.raises(sqlite3.DatabaseError):
        build(broken, tmp_path / "cache2" / "lexicon.sqlite")
    assert not (tmp_path / "cache2" / "lexicon.sqlite").exists()


def write_notes(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def bilingual(tmp_path: Path, tsm: Any) -> dict[str, str]:
    root = write_notes(tmp_path / "bilingual", NOTES)
    env = {"TSM_INDEX_ROOT": str(root), "TSM_EMBEDDER": "none"}
    assert tsm("index", "-f", "json", env=env).code == 0
    return env


def test_a_japanese_question_finds_the_english_note_by_keywords(
    tsm: Any, bilingual: dict[str, str]
) -> None:
    result = tsm("search", "境界層と衝撃波", "--fts-only", "-f", "json", env=bilingual)
    assert result.code == 0, result.err
    hits = result.json()["results"]
    assert hits and hits[0]["source"]["path"] == "notes/aero.md"
    breakdown = hits[0]["score_breakdown"]
    assert breakdown["bridge"] > 0 and breakdown["fts"] == 0.0  # found by translation alone
    off = tsm(
        "search", "境界層と衝撃波", "--fts-only", "-f", "json", env=bilingual | {"TSM_BRIDGE": "0"}
    )
    assert off.code == 0 and off.json()["results"] == []


def test_an_english_question_finds_the_japanese_note(tsm: Any, bilingual: dict[str, str]) -> None:
    result = tsm("search", "proteins made from genes", "--fts-only", "-f", "json", env=bilingual)
    assert result.code == 0, result.err
    hits = result.json()["results"]
    assert [h["source"]["path"] for h in hits] == ["notes/cells.md"]
    assert hits[0]["score_breakdown"]["bridge"] > 0


@pytest.mark.parametrize("query", ["Ωμέγα κείμενο", "x 1998", "ゞゞ", "wave " * 200])
def test_odd_queries_still_answer(tsm: Any, bilingual: dict[str, str], query: str) -> None:
    result = tsm("search", query, "--fts-only", "-f", "json", env=bilingual)
    assert result.code == 0, result.err
    assert "results" in result.json()


PARAPHRASED = {
    "notes/singer.md": "# 来日公演\n\nその歌手は去年はじめて日本の舞台に立った。\n",
    "notes/garden.md": "# 庭の手入れ\n\n春になったら芝を刈り、花の苗を植える。\n",
    "notes/train.md": "# 終電\n\n終電を逃したので駅前のホテルに泊まった。\n",
}


def test_japanese_words_bring_their_near_synonyms(lexicon: Lexicon) -> None:
    tokenizer = get_tokenizer()
    found = sources(
        synonym_groups(bridge_groups("カリブ出身の歌い手", tokenizer, lexicon), tokenizer, lexicon)
    )
    assert "歌手" in found["歌い手"]  # 歌い手 -> singer -> 歌手
    assert all("歌い手" not in alternatives for alternatives in found.values())
    # English words take no round trip (their glosses would be every sense's).
    english = bridge_groups("the singer from the caribbean", tokenizer, lexicon)
    assert english and synonym_groups(english, tokenizer, lexicon) == []


@pytest.fixture
def paraphrased(tmp_path: Path, tsm: Any) -> dict[str, str]:
    """Japanese notes indexed with the real model."""
    root = write_notes(tmp_path / "paraphrased", PARAPHRASED)
    env = {"TSM_INDEX_ROOT": str(root), "TSM_PARAPHRASE": "1"}
    indexed = tsm("index", "-f", "json", env=env)
    assert indexed.code == 0, indexed.err
    return env


@pytest.mark.parametrize("mode", ["--fts-only", "--hybrid"])
def test_a_paraphrase_finds_the_note_through_a_near_synonym(
    tsm: Any, paraphrased: dict[str, str], mode: str
) -> None:
    """歌い手 is not in any note; its near-synonym 歌手 is (score_breakdown.paraphrase)."""
    args = ("search", "歌い手", "-f", "json") + ((mode,) if mode != "--hybrid" else ())
    result = tsm(*args, env=paraphrased)
    assert result.code == 0, result.err
    hits = result.json()["results"]
    assert hits and hits[0]["source"]["path"] == "notes/singer.md"
    assert hits[0]["score_breakdown"]["paraphrase"] > 0
    assert all(h["score_breakdown"]["paraphrase"] is None for h in hits[1:])
    if mode == "--fts-only":
        assert len(hits) == 1 and hits[0]["score_breakdown"]["fts"] == 0.0
        for off in ({"TSM_BRIDGE": "0"}, {"TSM_PARAPHRASE": "0"}):  # the default is off
            found = tsm(*args, env=paraphrased | off)
            assert found.code == 0 and found.json()["results"] == []
