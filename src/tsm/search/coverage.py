"""Term coverage: the IDF-weighted share of a query's terms that a chunk contains (0..1).

Near 0 when the query's distinctive words occur nowhere (another language, a paraphrase):
keyword ranks are then noise, and fusion must not let them outvote the vector ranking. It is
also an absolute relevance cue, unlike RRF scores, which only order results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..store import keywords
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
    """Per-query helper. The store is read once for the document frequencies and the chunks
    asked about first, and once more for each later set of chunks not read yet (a page of
    results): never once per term."""

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
        self._read: set[int] = set()  # chunks whose matches are known
        self._matched: dict[str, set[int]] = {t: set() for t in self.terms}

    def read(self, chunk_ids: Sequence[int]) -> None:
        """Read what is not known yet: the frequencies on first use, and which of these
        chunks hold each term; one statement."""
        unread = [c for c in dict.fromkeys(chunk_ids) if c not in self._read]
        if self._idf is not None and not unread:
            return
        expressions = [self._match(t) for t in self.terms]
        found = keywords.term_matches(self.conn, expressions, unread, frequencies=self._idf is None)
        self.learn(found.chunks, found.frequencies, found.among, unread)

    def learn(
        self,
        total: int | None,
        frequencies: Sequence[int] | None,
        among: Sequence[set[int]],
        chunk_ids: Sequence[int],
    ) -> None:
        """Take what was read: the chunk count and each term's frequency (once), and which
        of `chunk_ids` each term matches."""
        if frequencies is not None and self._idf is None:
            chunks = total or 1
            self._idf = {}
            for term, df in zip(self.terms, frequencies, strict=True):
                self._idf[term] = math.log((chunks - df + 0.5) / (df + 0.5) + 1.0)
                if df:
                    self._known.add(term)
        for term, matched in zip(self.terms, among, strict=True):
            self._matched[term] |= matched
        self._read.update(chunk_ids)

    def conditions(self) -> list[tuple[str, list[object]]] | None:
        """SQL tests of a chunk for each term (store.keywords.chunk_condition), for a reader
        that fetches the chunks anyway (a page of results) to answer them in its own
        statement; None when the frequencies are not read yet (per_chunk reads both in one
        statement) or a term cannot be tested in SQL."""
        if self._idf is None:
            return None
        found = [keywords.chunk_condition(self.conn, self._match(t)) for t in self.terms]
        return None if any(c is None for c in found) else found  # type: ignore[return-value]

    def take(self, matches: dict[int, Sequence[bool]]) -> None:
        """Take the answers to conditions(): chunk id → whether it matches each term."""
        among = [
            {chunk for chunk, found in matches.items() if found[n]} for n in range(len(self.terms))
        ]
        self.learn(None, None, among, list(matches))

    def idf(self) -> dict[str, float]:
        """Lucene-style BM25 IDF per term over chunks; unseen terms get the highest IDF."""
        if self._idf is None:
            self.read(())
        assert self._idf is not None
        return self._idf

    def per_chunk(self, chunk_ids: Sequence[int], known_only: bool = False) -> dict[int, float]:
        """chunk id → coverage of the query by that chunk; `known_only` counts only the
        terms that occur somewhere in the index."""
        self.read(chunk_ids)
        idf = self.idf()
        if known_only:
            idf = {t: w for t, w in idf.items() if t in self._known}
        if not chunk_ids or not idf:
            return {c: 0.0 for c in chunk_ids}
        mass = sum(idf.values())
        matched = dict.fromkeys(chunk_ids, 0.0)
        for term, weight in idf.items():
            for rowid in self._matched[term].intersection(matched):
                matched[rowid] += weight
        return {c: term_coverage(m, mass) for c, m in matched.items()}

    def _match(self, term: str) -> str:
        return self._expressions.get(term) or quote_term(term)

    def has_read(self, chunk_ids: Sequence[int]) -> bool:
        """Whether the frequencies and these chunks' matches are known already."""
        return self._idf is not None and self._read.issuperset(chunk_ids)

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
        self.read(chunk_ids)
        share = len(self._known) / len(self.terms)
        return max(self.per_chunk(chunk_ids, known_only=True).values(), default=0.0) * math.sqrt(
            share
        )


def read_together(wanted: Sequence[tuple[TermCoverage, Sequence[int]]]) -> None:
    """Read what several coverages (the keywords', each translation's) need about these
    chunks in one statement instead of one each, leaving out those that know it already;
    they must share a connection."""
    pending = [(cover, ids) for cover, ids in wanted if cover.terms and not cover.has_read(ids)]
    if not pending:
        return
    expressions = [cover._match(t) for cover, _ in pending for t in cover.terms]
    chunk_ids = list(dict.fromkeys(c for _, ids in pending for c in ids))
    found = keywords.term_matches(pending[0][0].conn, expressions, chunk_ids, frequencies=True)
    assert found.frequencies is not None
    at = 0
    for cover, _ in pending:
        size = len(cover.terms)
        cover.learn(
            found.chunks or 1,
            found.frequencies[at : at + size],
            found.among[at : at + size],
            chunk_ids,
        )
        at += size
