"""Snippets: at most 200 characters, around the densest cluster of query terms, whole characters
only, and the start of the text when nothing matches."""

from __future__ import annotations

import random

import pytest

from tsm.search.snippets import SNIPPET_CHARS, make_snippet

FILLER = "lorem ipsum dolor sit amet " * 100
JA_FILLER = "関係のない文章がここに続きます。" * 60


def flatten(text: str) -> str:
    return " ".join(text.split())


def body_of(snippet: str) -> str:
    """The snippet without the ellipses that mark cut ends."""
    return snippet.removeprefix("…").removesuffix("…")


def assert_well_formed(text: str, snippet: str) -> None:
    assert len(snippet) <= SNIPPET_CHARS
    assert body_of(snippet) in flatten(text)
    snippet.encode("utf-8")  # no lone surrogates (would raise UnicodeEncodeError)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in snippet)


def test_limit_is_200() -> None:
    assert SNIPPET_CHARS == 200


def test_short_text_is_returned_whole_and_flattened() -> None:
    assert make_snippet("short  text\n\nhere", ["nothing"]) == "short text here"
    assert make_snippet("", ["x"]) == ""


def test_exactly_200_chars_is_not_cut() -> None:
    text = "a" * 200
    assert make_snippet(text, ["a"]) == text


def test_no_match_gives_start_of_text() -> None:
    snippet = make_snippet(FILLER, ["zebra"])
    assert len(snippet) == SNIPPET_CHARS
    assert snippet.startswith("lorem ipsum dolor")
    assert snippet.endswith("…")
    assert_well_formed(FILLER, snippet)


def test_no_terms_gives_start_of_text() -> None:
    assert make_snippet(FILLER, []).startswith("lorem ipsum")
    assert make_snippet(FILLER, [""]).startswith("lorem ipsum")


def test_match_deep_in_long_text_is_shown() -> None:
    text = FILLER + "the needle is here " + FILLER
    snippet = make_snippet(text, ["needle"])
    assert "needle" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert_well_formed(text, snippet)
    # Context before the match, not just the match at the left edge.
    assert snippet.index("needle") > 20


def test_match_is_case_insensitive() -> None:
    text = FILLER + " The NEEDLE here " + FILLER
    assert "NEEDLE" in make_snippet(text, ["needle"])


def test_densest_cluster_wins_over_first_match() -> None:
    text = "alpha " + FILLER + " alpha beta gamma " + FILLER + " beta "
    snippet = make_snippet(text, ["alpha", "beta", "gamma"])
    assert "alpha beta gamma" in snippet
    assert_well_formed(text, snippet)


def test_cluster_of_distinct_terms_beats_repeats_of_one() -> None:
    text = ("deer " * 30) + FILLER + " deer trap licence " + FILLER
    snippet = make_snippet(text, ["deer", "trap", "licence"])
    assert "trap" in snippet and "licence" in snippet


def test_match_near_start_has_no_leading_ellipsis() -> None:
    text = "needle first " + FILLER
    snippet = make_snippet(text, ["needle"])
    assert snippet.startswith("needle first")
    assert snippet.endswith("…")


def test_match_near_end() -> None:
    text = FILLER + " final needle"
    snippet = make_snippet(text, ["needle"])
    assert snippet.startswith("…")
    assert snippet.endswith("final needle")
    assert_well_formed(text, snippet)


def test_japanese_match_deep_in_text() -> None:
    text = JA_FILLER + "罠猟の捕獲報告アプリを作った。" + JA_FILLER
    snippet = make_snippet(text, ["捕獲", "アプリ"])
    assert "捕獲報告アプリ" in snippet
    assert_well_formed(text, snippet)


def test_emoji_and_combining_text_is_whole() -> None:
    text = "😀🎉" * 300 + " target " + "🐗" * 300
    snippet = make_snippet(text, ["target"])
    assert "target" in snippet
    assert_well_formed(text, snippet)


def test_whitespace_is_flattened() -> None:
    text = FILLER.replace(" ", "\n\t ") + " needle "
    snippet = make_snippet(text, ["needle"])
    assert "\n" not in snippet and "\t" not in snippet and "  " not in snippet


@pytest.mark.parametrize("seed", range(5))
def test_random_texts_are_well_formed(seed: int) -> None:
    rng = random.Random(seed)
    words = [
        "狩猟",
        "免許",
        "を",
        "取得",
        "した。",
        "deer",
        "trap",
        "LoRa",
        "🦌",
        "、",
        " ",
        "\n",
        "x" * 30,
        "İstanbul",
        "ß",
    ]
    for _ in range(200):
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 300)))
        terms = rng.sample(["狩猟", "deer", "lora", "trap", "zzz", "免許"], rng.randint(0, 3))
        assert_well_formed(text, make_snippet(text, terms))


@pytest.mark.parametrize("width", [20, 80, 150])
def test_custom_width(width: int) -> None:
    text = FILLER + " needle " + FILLER
    snippet = make_snippet(text, ["needle"], width=width)
    assert len(snippet) <= width
    assert body_of(snippet) in flatten(text)


def test_lowercase_length_change_does_not_shift_window() -> None:
    # 'İ'.lower() is two code points: positions found in a plain lower() would drift.
    text = "İzmir İstanbul " * 100 + "the needle is here " + FILLER
    assert "needle" in make_snippet(text, ["needle"])


def test_a_term_with_a_dotted_capital_i_finds_its_word() -> None:
    text = FILLER + " the port of İzmir is busy " + FILLER
    assert "İzmir" in make_snippet(text, ["İzmir"])
