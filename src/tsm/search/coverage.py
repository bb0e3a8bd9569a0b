"""Term coverage: the IDF-weighted share of a query's terms that a chunk contains (0..1).

Near 0 when the query's distinctive words occur nowhere (another language, a paraphrase):
keyword ranks are then noise, and fusion must not let them outvote the vector ranking. It is
also an absolute relevance cue, unlike RRF scores, which only order results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..store import chunks, keywords
from ..store.connect import Connection
from .fts import quote_term
from .fuse import term_coverage


def content_terms(terms: Sequence[str]) -> list[str]:
    """The query's terms that can say what it is about: not numbers (a year, a count) and
    not single Latin letters (an initial, a variable name), which match notes on any topic.
    A word with digits in it (p53, H2O) stays: it names something. Only the tuning bench
    uses this: keyword evidence over content words alone lowered jaquad-para and scifact-ja
    (bench/results/bridge.md), so the engine counts every word."""
    return [t for t in terms if any(c.isalpha() for c in t) and not (len(t) == 1 and t.isascii())]


class TermCoverage:
    """Per-query helper; document frequencies are looked up once per term."""

    def __init__(
        self,
        conn: Connection,
        terms: Sequence[str],
        expressions: Mapping[str, str] | None = None,
    ) -> None:
        """`expressions` gives a term its own FTS5 expression: a bridge group (bridge.py)
        is one term whose alternatives count once."""
        self.conn = conn
        self.terms = list(dict.fromkeys(terms))
        self._expressions = dict(expressions or {})
        self._idf: dict[str, float] | None = None
        self._known: set[str] = set()  # terms that occur in at least one chunk

    def idf(self) -> dict[str, float]:
        """Lucene-style BM25 IDF per term over chunks; unseen terms get the highest IDF."""
        if self._idf is None:
            total = chunks.count(self.conn) or 1
            self._idf, self._known = {}, set()
            found = keywords.document_frequencies(self.conn, [self._match(t) for t in self.terms])
            for term, df in zip(self.terms, found, strict=True):
                self._idf[term] = math.log((total - df + 0.5) / (df + 0.5) + 1.0)
                if df:
                    self._known.add(term)
        return self._idf

    def per_chunk(self, chunk_ids: Sequence[int], known_only: bool = False) -> dict[int, float]:
        """chunk id → coverage of the query by that chunk; `known_only` counts only the
        terms that occur somewhere in the index."""
        idf = self.idf()
        if known_only:
            idf = {t: w for t, w in idf.items() if t in self._known}
        if not chunk_ids or not idf:
            return {c: 0.0 for c in chunk_ids}
        mass = sum(idf.values())
        matched = dict.fromkeys(chunk_ids, 0.0)
        for term, weight in idf.items():
            for rowid in keywords.matching_among(self.conn, self._match(term), chunk_ids):
                matched[rowid] += weight
        return {c: term_coverage(m, mass) for c, m in matched.items()}

    def _match(self, term: str) -> str:
        return self._expressions.get(term) or quote_term(term)

    def best(self, chunk_ids: Sequence[int]) -> float:
        """Coverage of the best of these chunks."""
        return max(self.per_chunk(chunk_ids).values(), default=0.0)

    def keyword_evidence(self, chunk_ids: Sequence[int]) -> float:
        """How far the best of these chunks answers the query in words the index knows.

        A query word that occurs nowhere in the index (another language, a typo) cannot be
        matched by any note, so it says nothing about the keyword ranking's quality: coverage
        is taken over the known words only, then damped by the square root of their share of
        the query, since a ranking built on few of its words is weaker evidence. A Japanese
        claim over English abstracts whose one known word is the acronym `p53` gets credit
        for the abstract containing it; a query of known but generic words does not
        (bench/results/fusion-tuning.md).
        """
        if not self.terms:
            return 0.0
        self.idf()
        share = len(self._known) / len(self.terms)
        return max(self.per_chunk(chunk_ids, known_only=True).values(), default=0.0) * math.sqrt(
            share
        )
