"""Matched words painted where they stand: the highlighter finds words in a lowercase of the
text and paints the text itself at those places, so the two must keep the same positions."""

from __future__ import annotations

from tsm.render.human_format import highlight, query_words
from tsm.render.terminal import Terminal

COLOUR = Terminal(color=True)
MATCH = "\x1b[1;33m{}\x1b[0m"


def test_a_dotted_capital_i_before_a_match_does_not_move_the_paint() -> None:
    # 'İ'.lower() is two code points: positions found in a plain lower() would drift.
    out = highlight("İstanbul İzmir the needle here", ["needle"], COLOUR)
    assert MATCH.format("needle") in out


def test_a_query_word_with_a_dotted_capital_i_paints_its_word() -> None:
    out = highlight("the port of İzmir is busy", query_words("İzmir"), COLOUR)
    assert MATCH.format("İzmir") in out
