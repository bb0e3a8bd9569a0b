"""Lowercase that keeps every position: what finds a query's words in a text and then cuts
or paints the text itself at the places found."""

from __future__ import annotations


def lower_in_place(text: str) -> str:
    """`text` lowercased letter for letter, so a position in it is the same position in
    `text`: str.lower() turns İ into two code points (i and a combining dot), which would
    move every match after one to the right. Such a letter becomes its first code point."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(c.lower()[:1] for c in text)
