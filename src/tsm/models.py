"""Frozen dataclasses shared by every stage: what a source yields, what the store keeps,
and what a search returns. Interfaces only serialise these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The words of a search that every interface offers (core/request.py) and the query
# builder checks (search/query.py).
DOCUMENT_TYPES = ("markdown", "pdf", "text", "session")
SEARCH_MODES = ("hybrid", "fts", "vector")
# When vectors are unavailable (no model, or no chunk embedded yet): "auto" (the default)
# returns keyword results with a warning unless vectors were asked for (--vec-only),
# "fts-only" does the same, "error" fails (exit 2).
FALLBACKS = ("auto", "error", "fts-only")
# The most results a search returns: more than anyone reads, and SQLite's LIMIT takes 64-bit
# integers only.
MAX_TOP_K = 10_000


@dataclass(frozen=True)
class Link:
    """An outgoing reference found in a document: `[[wikilink]]` or a relative Markdown link."""

    target: str
    link_type: str  # "wikilink" | "markdown"


@dataclass(frozen=True)
class Section:
    """A run of text under one heading path (or one PDF page, or one Q&A turn)."""

    heading: str  # "H1 > H2 > H3", "" at the top of a document
    text: str
    page: int | None = None
    line: int | None = None  # 1-based line where the section starts, when known
    date: str | None = None  # ISO date of this part (session turns), else the document's
    # The 1-based line of the file on which `text` begins, when `text` is the file's own
    # lines (Markdown, plain text); None when it is not (a PDF page, a transcript's turn).
    # The chunker counts from it the line each chunk starts on.
    text_line: int | None = None


@dataclass(frozen=True)
class Document:
    """A parsed source file, before chunking. Readers produce it; the store keeps it."""

    path: str  # relative to the index root, POSIX separators
    type: str  # markdown | pdf | text | session
    title: str
    text: str
    sections: tuple[Section, ...]
    tags: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    aliases: tuple[str, ...] = ()
    status: str | None = None
    created: str | None = None
    updated: str | None = None
    date: str | None = None  # the date used by filters and recency
    # frontmatter:updated | frontmatter:date | filename | git:commit | mtime …
    date_source: str | None = None
    malformed_lines: int = 0  # lines a reader had to skip (session transcripts)


@dataclass(frozen=True)
class Chunk:
    """One searchable unit: a piece of a section small enough to embed."""

    index: int
    section: str
    text: str
    page: int | None = None
    line: int | None = None  # 1-based line of the file where `text` starts (Section.text_line)
    date: str | None = None


@dataclass(frozen=True)
class Related:
    """A document linked from or to a result (`related` in the JSON)."""

    path: str
    link_type: str  # wikilink | markdown | backlink
    strength: float


@dataclass(frozen=True)
class Source:
    """Where a hit comes from (`source` in the JSON contract)."""

    document_id: int
    title: str
    path: str
    type: str
    page: int | None
    chunk_index: int
    total_chunks: int
    tags: tuple[str, ...]
    category: str
    status: str | None
    created: str | None
    updated: str | None
    stale: bool = False
    # The 1-based line of the file the hit's passage starts on: where an editor opens it.
    # None for PDFs and transcripts, and for passages indexed before tsm kept it.
    line: int | None = None


@dataclass(frozen=True)
class ScoreBreakdown:
    """Each signal's score-scaled RRF contribution (fuse.score_scaled_rrf: at most the weight
    the signal earned for this query; None when the signal was not used) and the
    multipliers."""

    fts: float | None
    vector: float | None
    recency: float = 1.0
    status: float = 1.0
    weight: float = 1.0
    entity: float | None = None  # RRF contribution of a tag/title/alias named by the query
    # RRF contribution of the query's words translated into the other language (Japanese ↔
    # English, search/bridge.py): why a note in the language the query is not was found.
    bridge: float | None = None
    # RRF contribution of near-synonyms of the query's Japanese words (ja -> en -> ja through
    # the same lexicon, search/bridge.synonym_groups): why a note that words it differently
    # (歌手 for the query's 歌い手) was found.
    paraphrase: float | None = None
    # Absolute relevance cues (RRF scores only order results): cosine similarity of the chunk
    # to the query, and the IDF-weighted share of the query's words the chunk contains.
    similarity: float | None = None
    coverage: float | None = None
    # similarity minus the query's best cosine with a generic request (search/relevance.py):
    # above 0 the hit is closer to the query than "fix this test" is; below, probably noise.
    relevance: float | None = None
    # The relevance only 1 % of the generic requests reach against this vault (the same for
    # every hit of a search; relevance.noise_level), and whether a query word is a word of the
    # hit's path (relevance.names_note): the prompt hook wants a hit the prompt does not name
    # to be more relevant than that level.
    noise: float | None = None
    named: bool | None = None
    # How clearly the vector ranking's top stands out, (top - 10th cosine) / (top - the query's
    # mean cosine) (fuse.vector_drop; the same for every hit of a search, None without vectors
    # or with fewer than ten ranked): a prompt about the notes makes the vectors single a few
    # out, an everyday request brushing a word of the notes leaves a flat run of look-alikes.
    vector_drop: float | None = None
    # How many words of the hit's path the query names that no generic request uses
    # (relevance.distinct_names): "undici" and "certificate" count, "server" does not.
    distinct_names: int | None = None


@dataclass(frozen=True)
class Hit:
    """One search result: the best chunk of one document."""

    chunk_id: int
    score: float
    score_breakdown: ScoreBreakdown
    text: str
    source: Source
    section: str
    snippet: str
    related: tuple[Related, ...] = ()
    content: str | None = None


@dataclass(frozen=True)
class SearchResult:
    """What `search()` returns; rendered as the contract JSON or for a terminal."""

    query: str
    results: tuple[Hit, ...]
    total_matches: int
    mode: str  # hybrid | fts | vector
    took_ms: float
    filters: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # What the vector side did: "used", "loading" (the daemon was still loading the model or
    # the vectors, so keywords answered without waiting), "unavailable" (no model, no
    # vector yet, or a failure: the --fallback path) or "off" (not asked for).
    vector_status: str = "off"

    @property
    def returned(self) -> int:
        return len(self.results)
