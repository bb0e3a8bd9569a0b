"""The bilingual keyword bridge: a query's content words translated into the other language
(Japanese ↔ English, lexicon.py), so the keyword signal finds a note written in the language
the query is not.

Dictionary-based cross-language retrieval loses most to two things (Pirkola, "The effects of
query structure and dictionary setups in dictionary-based cross-language information
retrieval", SIGIR 1998): multi-word terms split into words that mean something else
(境界層 is "boundary layer", not "boundary" + "layer"), and words with many translations
outweighing words with one. So the longest phrase the dictionary knows is translated first,
and the translations of one source word form one group: an OR of alternatives whose
coverage counts once (coverage.TermCoverage with group expressions).

The same lexicon gives a Japanese word its near-synonyms by a round trip (synonym_groups:
歌い手 → singer → 歌手), searched as a fourth keyword ranking for paraphrases that share no
word with their note.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .fts import quote_term
from .results import Match

if TYPE_CHECKING:
    from ..text.tokenizer import JapaneseTokenizer
    from .lexicon import Lexicon

MAX_PHRASE = 4  # words (English) or morphemes (Japanese) tried as one dictionary term
MAX_GROUPS = 24  # a 200-word prompt is translated by its first content words only
MAX_SYNONYMS = 6  # per source word (3 renderings x up to 3 headwords each)
# A text is Japanese when Japanese characters make up at least this share of its letters
# (kana and kanji against Latin letters). A Japanese character carries about a word's
# worth of an English word's four to six letters, so a Japanese note quoting product names,
# acronyms and a link (LoRa, GPS, lora-module-guide.md) stays Japanese, and an English
# abstract naming one Japanese term stays English.
JAPANESE_SHARE = 0.2
_LATIN = re.compile(r"[A-Za-z]")
_JA_RUN = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶ]+")
_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")
_EN_WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")
_SKIP_POS = {"助詞", "助動詞", "補助記号", "空白", "記号"}
# Words too general to translate usefully: their translations match every note.
EN_STOP = frozenset(
    "a an and are as at be but by for from has have he her his i if in into is it its of on or "
    "our she so such than that the their them then there these they this to was we were what "
    "when where which who whom why will with you your do does did not no can could would should "
    "how about been being had may might must shall also any all some many much more most other "
    "very just only over under after before between during while each both same own who's "
    "name named called one two three first second new old make made use used get got".split()
)


@dataclass(frozen=True)
class BridgeGroup:
    """One source word or phrase of the query and its translations as FTS5 phrases."""

    source: str
    translations: tuple[str, ...]

    @property
    def expression(self) -> str:
        """The group as one FTS5 alternative: ("a" OR "b c")."""
        return "(" + " OR ".join(quote_term(t) for t in self.translations) + ")"


def bridge_groups(text: str, tokenizer: JapaneseTokenizer, lexicon: Lexicon) -> list[BridgeGroup]:
    """Translation groups for a query: Japanese runs into English, English words into
    Japanese; words the lexicon does not know (names, numbers, other scripts) are left to
    the ordinary keyword signal."""
    text = unicodedata.normalize("NFKC", text).lower()
    groups: list[BridgeGroup] = []
    pos = 0
    for match in _JA_RUN.finditer(text):
        groups += _english_groups(text[pos : match.start()], tokenizer, lexicon)
        groups += _japanese_groups(match.group(), lexicon, tokenizer)
        pos = match.end()
    groups += _english_groups(text[pos:], tokenizer, lexicon)
    seen: dict[str, BridgeGroup] = {}
    for group in groups:
        seen.setdefault(group.source, group)
    return list(seen.values())[:MAX_GROUPS]


def synonym_groups(
    groups: list[BridgeGroup], tokenizer: JapaneseTokenizer, lexicon: Lexicon
) -> list[BridgeGroup]:
    """Near-synonyms of the query's Japanese words, by a round trip through the lexicon:
    the Japanese headwords that JMdict glosses with the word's own English renderings
    (歌い手 → singer → 歌手, 行楽客 → tourist → 観光客). Each source word's synonyms form
    one group (Pirkola 1998, as the translations do), the word itself left out: the
    keyword ranking has it already. Japanese words only: the reverse trip (an English word
    → its Japanese renderings → their glosses) collects the glosses of every sense of each
    rendering, and lowered SciFact (bench/results/paraphrase.md)."""
    out: list[BridgeGroup] = []
    for group in groups:
        if not _JA_RUN.search(group.source):
            continue
        own = " ".join(tokenizer.ja_terms(group.source))
        found: list[str] = []
        for english in group.translations:
            for word in lexicon.japanese(english):
                phrase = " ".join(tokenizer.ja_terms(word))
                if phrase and phrase != own and phrase not in found and not _has_digit(phrase):
                    found.append(phrase)
        if found:
            out.append(BridgeGroup(group.source, tuple(found[:MAX_SYNONYMS])))
    return out


def text_language(text: str) -> str:
    """'ja' or 'en': the language a translated term must differ from to count (the bridge
    finds notes in the language the query is not). Text without letters counts as
    English, as the English side holds everything that is not Japanese."""
    japanese = sum(len(run) for run in _JA_RUN.findall(text))
    latin = len(_LATIN.findall(text))
    total = japanese + latin
    return "ja" if total and japanese / total >= JAPANESE_SHARE else "en"


def split_by_source_language(groups: list[BridgeGroup]) -> dict[str, list[BridgeGroup]]:
    """The groups by the language of their source word: the Japanese words' English
    renderings count for English notes, the English words' Japanese ones for Japanese
    notes; a mixed query has both."""
    out: dict[str, list[BridgeGroup]] = {}
    for group in groups:
        out.setdefault(text_language(group.source), []).append(group)
    return out


def across_languages(
    ranked: list[Match], language_of: Mapping[int, str], source: str
) -> list[Match]:
    """The hits (chunk id, document id, score) of a translated ranking whose chunk is not
    in the language of the words translated: a translation counts only where the user's
    own word cannot, in a note of the other language. Inside one language the keywords
    already match the word the user typed, and the translation matches only what the note
    borrows from the other language (a link's file name, a quoted term), which said
    nothing the keywords had not weighed."""
    return [hit for hit in ranked if language_of.get(hit[0], "en") != source]


def bridge_expression(groups: list[BridgeGroup]) -> str | None:
    """OR of every group's alternatives; None without groups."""
    return " OR ".join(g.expression for g in groups) if groups else None


def _english_groups(text: str, tokenizer: JapaneseTokenizer, lexicon: Lexicon) -> list[BridgeGroup]:
    words = _EN_WORD.findall(text)
    groups: list[BridgeGroup] = []
    i = 0
    while i < len(words) and len(groups) < MAX_GROUPS:
        for n in range(min(MAX_PHRASE, len(words) - i), 0, -1):
            span = words[i : i + n]
            if span[0] in EN_STOP or span[-1] in EN_STOP or (n == 1 and len(span[0]) < 3):
                continue
            phrase = " ".join(span)
            found = lexicon.japanese(phrase) or _singular_lookup(span, lexicon)
            phrases = [
                p
                for p in (" ".join(tokenizer.ja_terms(w)) for w in found if _JA_RUN.fullmatch(w))
                if p and not _has_digit(p)
            ]
            if phrases:
                groups.append(BridgeGroup(phrase, tuple(dict.fromkeys(phrases))))
                i += n
                break
        else:
            i += 1
    return groups


def _singular_lookup(span: list[str], lexicon: Lexicon) -> list[str]:
    """'waves' → 'wave', 'studies' → 'study': JMdict glosses are singular."""
    last = span[-1]
    for stem in (
        last[:-3] + "y" if last.endswith("ies") else None,
        last[:-2] if last.endswith(("ses", "xes", "ches", "shes")) else None,
        last[:-1] if last.endswith("s") and not last.endswith("ss") else None,
    ):
        if stem and len(stem) > 2:
            found = lexicon.japanese(" ".join([*span[:-1], stem]))
            if found:
                return found
    return []


def _japanese_groups(run: str, lexicon: Lexicon, tokenizer: JapaneseTokenizer) -> list[BridgeGroup]:
    morphemes = [
        (m.surface(), m.dictionary_form(), m.part_of_speech()[0]) for m in tokenizer.morphemes(run)
    ]
    groups: list[BridgeGroup] = []
    i = 0
    while i < len(morphemes) and len(groups) < MAX_GROUPS:
        for n in range(min(MAX_PHRASE, len(morphemes) - i), 0, -1):
            span = morphemes[i : i + n]
            if any(pos in _SKIP_POS for _, _, pos in span):
                continue
            surface = "".join(s for s, _, _ in span)
            if n == 1 and (
                _HIRAGANA.match(surface)
                and len(surface) <= 3
                or len(surface) < 2
                and not _is_kanji(surface)
            ):
                continue
            found = lexicon.english(surface)
            if not found and n == 1 and span[0][1] != surface:
                found = lexicon.english(span[0][1])  # 作っ → 作る
            if found:
                groups.append(BridgeGroup(surface, tuple(found)))
                i += n
                break
        else:
            i += 1
    return groups


def _has_digit(text: str) -> bool:
    """四つ is indexed as "4 つ": a number matches every note that counts anything."""
    return any(c.isdigit() for c in text)


def _is_kanji(text: str) -> bool:
    return bool(text) and all("\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff" for c in text)
