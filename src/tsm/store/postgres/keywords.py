"""The keyword index on PostgreSQL, ranked exactly as SQLite's FTS5 ranks it (store/keywords.py).

Same terms: every column is split into terms by SQLite itself. An in-memory FTS5 table with the
tokenizer of `chunks_fts` and an `fts5vocab` 'instance' table give a text's terms in order, so
stemming, case and diacritics match FTS5 bit for bit with no new dependency. The columns come
pre-tokenized (words separated by white space, which FTS5 also splits at), so each distinct word
is split once and remembered: a chunk's terms are then dictionary look-ups.

The index: `keyword_postings` has a row per (lexeme, chunk) with the lexeme's count in each
column and the chunk's token count, and its primary key carries them all (INCLUDE), so a
term's postings are one range of the btree read by an index-only scan. `chunk_keywords` has a
row per chunk with its token count and its terms in order (columns separated by a newline,
terms by a space: neither occurs in an FTS5 term), which only a phrase of several terms reads,
to check that its terms are adjacent. `keyword_totals` holds N and the token total as delta
rows that a trigger appends on every insert and delete of `chunk_keywords` (no row that
concurrent writers would queue on) and folds into one now and then.

Same scores: FTS5's bm25() (sqlite ext/fts5/fts5_aux.c, fts5Bm25Function) computed in SQL with
the same operations in the same order, so equal inputs give the same double (f_i is a count
times a weight where FTS5 adds the weight once per instance: the same for weights that are
multiples of a power of two, as tsm's are; other weights may differ in the last bit):
    score = -sum_i idf_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b |D| / avgdl))
with k1 = 1.2, b = 0.75; i runs over the expression's phrases in order (a repeated phrase
counts each time); f_i the column-weighted count of phrase i's instances in the row; |D| the
row's token count; avgdl the mean token count; idf_i = log((N - n_i + 0.5) / (n_i + 0.5)),
1e-6 when not positive, with n_i the rows that hold phrase i. Ties break as FTS5's do: by
chunk id within a rank, by document id between documents.

One statement ranks (`RANKED`): per phrase, a LATERAL index range of its postings and a count
of that range (n_i), summed per chunk in phrase order, N and avgdl from `keyword_totals`.
Its text never changes; the terms, weights and the phrases' matches are bound parameters, so
the server plans it once per connection (psycopg prepares it after a few runs, and its
generic plan is the same index ranges). A phrase of several terms is found first: the chunks
that hold all its terms (their postings), whose terms are then checked in order in Python.

Expressions are those of search/fts.py and search/bridge.py: double-quoted phrases joined by
OR, with parentheses. Anything else (AND, NOT, bare words, prefixes) is refused (ValueError):
nothing in tsm writes it, and its bm25() would differ.

psycopg is never imported here: the functions take the store's connection (store/postgres.py).
The ranking functions return (chunk id, document id, rank) tuples, which store/keywords.py
makes KeywordMatch (this module is imported by it, not the other way round).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# The tokenizer of `chunks_fts` (store/migrations.py, m001); tests/store/test_pg_keywords.py
# checks the two agree.
FTS5_TOKENIZE = "porter unicode61 remove_diacritics 2"
COLUMNS = ("title", "section", "body", "tags")

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
MAX_LEXEME_BYTES = 2046  # the longest lexeme kept as itself (a btree entry has a size limit)
WORD_CACHE_SIZE = 1 << 18  # distinct words remembered with their terms


# --- terms, as FTS5 makes them ------------------------------------------------------------


class _Scratch(threading.local):
    conn: sqlite3.Connection | None = None


_scratch = _Scratch()


@dataclass(frozen=True)
class _Word:
    terms: tuple[str, ...]  # its FTS5 terms in order
    text: str  # the same joined by spaces


_known: dict[str, _Word] = {}  # words seen, with their terms


def _fts5() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table (contentless: only its index is kept)."""
    conn = _scratch.conn
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(text, content='', tokenize = '{FTS5_TOKENIZE}')"
        )
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _scratch.conn = conn
    return conn


def lexeme(term: str) -> str:
    """The index's name for an FTS5 term: the term itself, or for one too long for a btree
    entry a digest ('#' never occurs in an FTS5 term, so the two cannot meet)."""
    if len(term.encode()) <= MAX_LEXEME_BYTES:
        return term
    return "#" + hashlib.sha256(term.encode()).hexdigest()


def _split(texts: Sequence[str]) -> list[tuple[str, ...]]:
    """The lexemes of each text in order, as FTS5 tokenizes it."""
    conn = _fts5()
    conn.execute("BEGIN")  # rolled back: the table only lends its tokenizer
    try:
        conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", enumerate(texts, start=1))
        found = sorted(conn.execute("SELECT doc, offset, term FROM v"))
    finally:
        conn.execute("ROLLBACK")
    out: list[list[str]] = [[] for _ in texts]
    for doc, _, term in found:
        out[doc - 1].append(lexeme(term))
    return [tuple(terms) for terms in out]


def _learn(words: Iterable[str]) -> dict[str, _Word]:
    """A map holding every one of `words` with its terms: those not seen yet are split, all
    in one pass of the tokenizer. A full cache is replaced, not emptied, so the map another
    thread holds stays whole."""
    global _known
    known = _known
    wanted = list(dict.fromkeys(words))
    new = [w for w in wanted if w not in known]
    if not new:
        return known
    if len(known) + len(new) > WORD_CACHE_SIZE:
        known, new = {}, wanted
    known.update((w, _Word(t, " ".join(t))) for w, t in zip(new, _split(new), strict=True))
    _known = known
    return known


def column_terms(text: str) -> list[str]:
    """A column's lexemes in order. FTS5 splits at white space as str.split does (every
    white-space character is a separator to unicode61), so a text's terms are its words'."""
    words = text.split()
    known = _learn(words)
    return [t for w in words for t in known[w].terms]


@dataclass(frozen=True)
class KeywordRow:
    """A chunk's keyword row: per lexeme its count in each column, its terms as stored (a
    newline between columns, a space between terms), and its token count (FTS5's column
    sizes summed)."""

    counts: dict[str, list[int]]
    terms: str
    tokens: int

    @property
    def columns(self) -> list[list[str]]:
        return stored_columns(self.terms)


def stored_columns(terms: str) -> list[list[str]]:
    """A chunk's columns, each its lexemes in order, from its stored terms."""
    return [column.split() for column in terms.split("\n")]


def keyword_rows(rows: Sequence[Sequence[str]]) -> list[KeywordRow]:
    """The keyword rows of (title, section, body, tags) texts: counted by word (a word's
    terms are the same wherever it occurs), then by term."""
    known = _learn(w for row in rows for text in row for w in text.split())
    out = []
    for row in rows:
        counts: dict[str, list[int]] = {}
        columns = []
        tokens = 0
        for col, text in enumerate(row):
            words = text.split()
            columns.append(" ".join([j for w in words if (j := known[w].text)]))
            for word, n in Counter(words).items():
                terms = known[word].terms
                tokens += n * len(terms)
                for term in terms:
                    found = counts.get(term)
                    if found is None:
                        counts[term] = found = [0] * len(COLUMNS)
                    found[col] += n
        out.append(KeywordRow(counts, "\n".join(columns), tokens))
    return out


@lru_cache(maxsize=4096)
def phrase_lexemes(text: str) -> tuple[str, ...]:
    """A quoted phrase's lexemes in order, as FTS5 splits it; () for a phrase of no token,
    which FTS5 drops from the expression."""
    return _split([text])[0]


# --- expressions --------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:"((?:[^"]|"")*)"|(OR)(?=[\s"(]|$)|([()]))')


def expression_phrases(expression: str) -> list[str]:
    """The phrases of an FTS5 expression of quoted phrases, OR and parentheses, in order (the
    order FTS5 numbers them in); ValueError for any other syntax."""
    phrases: list[str] = []
    depth, pos, want_operand = 0, 0, True
    while True:
        match = _TOKEN.match(expression, pos)
        if match is None:
            if expression[pos:].strip() or want_operand or depth:
                raise ValueError(f"unsupported keyword expression: {expression!r}")
            return phrases
        pos = match.end()
        quoted, keyword, paren = match.groups()
        if quoted is not None and want_operand:
            phrases.append(quoted.replace('""', '"'))
            want_operand = False
        elif keyword and not want_operand:
            want_operand = True
        elif paren == "(" and want_operand:
            depth += 1
        elif paren == ")" and not want_operand and depth:
            depth -= 1
        else:
            raise ValueError(f"unsupported keyword expression: {expression!r}")


@dataclass(frozen=True)
class Query:
    """An expression's phrases as lexeme tuples, in order, those of no token dropped."""

    phrases: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, expression: str) -> Query:
        found = (phrase_lexemes(p) for p in expression_phrases(expression))
        return cls(tuple(p for p in found if p))

    @property
    def distinct(self) -> list[tuple[str, ...]]:
        return list(dict.fromkeys(self.phrases))

    @property
    def terms(self) -> list[str]:
        """The one-lexeme phrases."""
        return [p[0] for p in self.distinct if len(p) == 1]

    @property
    def multi(self) -> list[tuple[str, ...]]:
        """The phrases of several lexemes."""
        return [p for p in self.distinct if len(p) > 1]


def phrase_count(
    columns: Sequence[Sequence[str]], phrase: Sequence[str], weights: Sequence[float]
) -> float:
    """The column-weighted number of instances of `phrase` among a row's columns (each its
    lexemes in order): an instance is the phrase's lexemes at consecutive offsets of one
    column, and FTS5 counts overlapping instances."""
    total = 0.0
    width = len(phrase)
    first = phrase[0]
    for terms, weight in zip(columns, weights, strict=False):
        for start, term in enumerate(terms):
            if term == first and tuple(terms[start : start + width]) == tuple(phrase):
                total += weight
    return total


# --- writes -------------------------------------------------------------------------------


def insert(conn: Any, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Add the keyword rows of chunks: (chunk id, title, section, body, tags)."""
    if not rows:
        return
    made = keyword_rows([r[1:] for r in rows])
    batch = []
    for r, m in zip(rows, made, strict=True):
        counts = list(m.counts.values())
        batch.append(
            {
                "id": r[0],
                "n": m.tokens,
                "t": m.terms,
                "l": list(m.counts),
                **{f"c{c}": [found[c] for found in counts] for c in range(len(COLUMNS))},
            }
        )
    # One JSON text for the batch (psycopg would escape every quote of a text[] parameter),
    # one statement for the chunk rows and the postings.
    conn.execute(
        """WITH r AS MATERIALIZED (
               SELECT * FROM jsonb_to_recordset(?::jsonb)
                   AS r(id BIGINT, n INTEGER, t TEXT, l TEXT[], c0 INTEGER[], c1 INTEGER[],
                        c2 INTEGER[], c3 INTEGER[])
           ), k AS (
               INSERT INTO chunk_keywords(chunk_id, terms, tokens) SELECT r.id, r.t, r.n FROM r
           )
           INSERT INTO keyword_postings(lexeme, chunk_id, c0, c1, c2, c3, tokens)
           SELECT e.l, r.id, e.c0, e.c1, e.c2, e.c3, r.n
           FROM r, unnest(r.l, r.c0, r.c1, r.c2, r.c3) AS e(l, c0, c1, c2, c3)""",
        (json.dumps(batch, ensure_ascii=False),),
    )


def delete_document(conn: Any, doc_id: int) -> None:
    """The keyword rows of a document's chunks; their postings follow (migration m005)."""
    conn.execute(
        """DELETE FROM chunk_keywords
           WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = ?)""",
        (doc_id,),
    )


# --- matching -----------------------------------------------------------------------------

# The chunks that hold every lexeme of a phrase (`?` the lexemes, `?` their number), with
# their terms; the second form only among some chunk ids.
_HOLDING_ALL = """
    SELECT k.chunk_id, k.tokens, k.terms FROM chunk_keywords k
    WHERE k.chunk_id IN (SELECT p.chunk_id FROM keyword_postings p
                         WHERE p.lexeme = ANY(?::text[]) GROUP BY p.chunk_id
                         HAVING count(*) = ?)"""
_HOLDING_ALL_AMONG = """
    SELECT k.chunk_id, k.tokens, k.terms FROM chunk_keywords k
    WHERE k.chunk_id IN (SELECT p.chunk_id FROM keyword_postings p
                         WHERE p.lexeme = ANY(?::text[]) AND p.chunk_id = ANY(?::bigint[])
                         GROUP BY p.chunk_id HAVING count(*) = ?)"""


@dataclass(frozen=True)
class _PhraseHit:
    tokens: int
    f: float  # the phrase's weighted instance count in the chunk


def _phrase_hits(
    conn: Any, phrase: tuple[str, ...], weights: Sequence[float], among: Sequence[int] | None
) -> dict[int, _PhraseHit]:
    """The chunks that hold `phrase` (its lexemes adjacent, in order, in one column)."""
    lexemes = list(dict.fromkeys(phrase))
    if among is None:
        rows = conn.execute(_HOLDING_ALL, (lexemes, len(lexemes)))
    else:
        rows = conn.execute(_HOLDING_ALL_AMONG, (lexemes, list(among), len(lexemes)))
    found: dict[int, _PhraseHit] = {}
    for chunk_id, tokens, terms in rows:
        columns = stored_columns(terms)
        if phrase_count(columns, phrase, (1.0,) * len(COLUMNS)):  # holds it, whatever the weights
            found[int(chunk_id)] = _PhraseHit(int(tokens), phrase_count(columns, phrase, weights))
    return found


@dataclass(frozen=True)
class _Match:
    """What matches a query: its one-term phrases' lexemes (read from the postings) and, per
    longer phrase, the chunks that hold it."""

    terms: list[str]
    phrase_hits: dict[tuple[str, ...], dict[int, _PhraseHit]]

    @property
    def phrase_ids(self) -> list[int]:
        return sorted({cid for found in self.phrase_hits.values() for cid in found})

    @property
    def empty(self) -> bool:
        return not self.terms and not self.phrase_ids


def _match(
    conn: Any,
    query: Query,
    weights: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
    among: Sequence[int] | None = None,
) -> _Match:
    hits = {p: _phrase_hits(conn, p, weights, among) for p in query.multi}
    return _Match(query.terms, hits)


# The chunk ids that match (`?` the one-term lexemes, `?` the ids holding a longer phrase).
_MATCHING = """
    SELECT p.chunk_id FROM keyword_postings p WHERE p.lexeme = ANY(?::text[])
    UNION SELECT unnest(?::bigint[])"""


def matching_chunk_ids(conn: Any, expression: str) -> Iterator[int]:
    match = _match(conn, Query.parse(expression))
    if match.empty:
        return iter(())
    return (r[0] for r in conn.execute(_MATCHING, (match.terms, match.phrase_ids)))


def document_frequency(conn: Any, expression: str) -> int:
    query = Query.parse(expression)
    if not query.multi:
        return document_frequencies(conn, [expression])[0]
    match = _match(conn, query)
    if match.empty:
        return 0
    sql = f"SELECT count(*) FROM ({_MATCHING}) m"
    return int(conn.execute(sql, (match.terms, match.phrase_ids)).fetchone()[0])


def document_frequencies(conn: Any, expressions: Sequence[str]) -> list[int]:
    """document_frequency of each expression: those made only of one-term phrases counted
    together in one statement over `keyword_postings` (a count over each term's index range,
    the distinct chunks where an expression has several terms), the others one by one."""
    queries = [Query.parse(e) for e in expressions]
    out = [0] * len(queries)
    lexemes: list[str] = []
    slots: list[int] = []
    for n, query in enumerate(queries):
        if query.multi:
            out[n] = document_frequency(conn, expressions[n])
        else:
            lexemes += query.terms
            slots += [n] * len(query.terms)
    if lexemes:
        # A subquery per expression, so each is an index range (a join over all of them let
        # the planner hash the whole table); one term's range needs no DISTINCT (a posting
        # per chunk), which coverage's one-term expressions are.
        rows = conn.execute(
            """SELECT s.slot, CASE WHEN cardinality(s.lexemes) = 1
                   THEN (SELECT count(*) FROM keyword_postings p WHERE p.lexeme = s.lexemes[1])
                   ELSE (SELECT count(DISTINCT p.chunk_id) FROM keyword_postings p
                         WHERE p.lexeme = ANY(s.lexemes)) END
               FROM (SELECT q.slot, array_agg(q.lexeme) AS lexemes
                     FROM unnest(?::text[], ?::int[]) AS q(lexeme, slot) GROUP BY q.slot) s""",
            (lexemes, slots),
        )
        for slot, count in rows:
            out[int(slot)] = int(count)
    return out


def matching_among(conn: Any, expression: str, chunk_ids: Sequence[int]) -> Iterator[int]:
    if not chunk_ids:
        return iter(())
    match = _match(conn, Query.parse(expression), among=chunk_ids)
    if match.empty:
        return iter(())
    rows = conn.execute(
        """SELECT p.chunk_id FROM keyword_postings p
           WHERE p.lexeme = ANY(?::text[]) AND p.chunk_id = ANY(?::bigint[])
           UNION SELECT unnest(?::bigint[])""",
        (match.terms, list(chunk_ids), match.phrase_ids),
    )
    return (r[0] for r in rows)


def count_matching_documents(
    conn: Any, expression: str, where: str, params: Sequence[object]
) -> int:
    match = _match(conn, Query.parse(expression))
    if match.empty:
        return 0
    return int(
        conn.execute(
            f"""SELECT count(DISTINCT c.document_id) FROM ({_MATCHING}) m
                JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.document_id
                WHERE ({where})""",
            (match.terms, match.phrase_ids, *params),
        ).fetchone()[0]
    )


# --- ranking ------------------------------------------------------------------------------


def _f8(x: float) -> str:
    """A double as an SQL float8 literal that reads back as the same double."""
    return f"'{float(x)!r}'::float8"


# Every matching chunk as (chunk_id, rank), FTS5's bm25() rank. Parameters: the phrases in
# order as (lexeme, n_i): a one-term phrase by its lexeme (n_i NULL: counted here), a longer
# one by NULL and its n_i; the four column weights; the longer phrases' hits as (phrase
# number, chunk id, token count, f_i).
RANKED = f"""
    WITH total AS (
        SELECT sum(rows)::float8 AS n, sum(tokens)::float8 / sum(rows)::float8 AS avgdl
        FROM keyword_totals
    ), counted AS MATERIALIZED (
        SELECT q.slot, q.lexeme, coalesce(q.n, (
                   SELECT count(*) FROM keyword_postings c WHERE c.lexeme = q.lexeme))::float8 AS n
        FROM unnest(?::text[], ?::bigint[]) WITH ORDINALITY AS q(lexeme, n, slot)
    ), phrase AS (
        SELECT q.slot, q.lexeme,
               CASE WHEN ln((total.n - q.n + 0.5::float8) / (q.n + 0.5::float8)) <= 0
                    THEN {_f8(IDF_FLOOR)}
                    ELSE ln((total.n - q.n + 0.5::float8) / (q.n + 0.5::float8)) END AS idf
        FROM counted q CROSS JOIN total
    ), weight AS (
        SELECT ?::float8 AS w0, ?::float8 AS w1, ?::float8 AS w2, ?::float8 AS w3
    ), hit AS (
        SELECT phrase.slot, phrase.idf, p.chunk_id, p.tokens,
               p.c0::float8 * weight.w0 + p.c1::float8 * weight.w1 + p.c2::float8 * weight.w2
               + p.c3::float8 * weight.w3 AS f
        FROM phrase CROSS JOIN weight
        CROSS JOIN LATERAL (
            SELECT p.chunk_id, p.tokens, p.c0, p.c1, p.c2, p.c3 FROM keyword_postings p
            WHERE p.lexeme = phrase.lexeme) p
        UNION ALL
        SELECT x.slot, phrase.idf, x.chunk_id, x.tokens, x.f
        FROM unnest(?::bigint[], ?::bigint[], ?::int[], ?::float8[]) AS x(slot, chunk_id, tokens, f)
        JOIN phrase ON phrase.slot = x.slot
    )
    SELECT hit.chunk_id,
           {_f8(-1.0)} * sum(
               hit.idf * ((hit.f * {_f8(K1 + 1.0)})
                          / (hit.f + {_f8(K1)}
                             * ({_f8(1 - B)} + {_f8(B)} * hit.tokens::float8 / total.avgdl)))
               ORDER BY hit.slot) AS rank
    FROM hit CROSS JOIN total GROUP BY hit.chunk_id"""


def _ranked(conn: Any, query: Query, weights: Sequence[float]) -> list[object] | None:
    """The parameters of RANKED for a query; None when nothing can match."""
    if not query.phrases:
        return None
    match = _match(conn, query, weights)
    if match.empty:
        return None
    lexemes: list[str | None] = []
    counts: list[int | None] = []
    slots: list[int] = []
    ids: list[int] = []
    tokens: list[int] = []
    fs: list[float] = []
    for slot, phrase in enumerate(query.phrases, start=1):  # FTS5's order, repeats included
        if len(phrase) == 1:
            lexemes.append(phrase[0])
            counts.append(None)
            continue
        found = match.phrase_hits[phrase]
        lexemes.append(None)
        counts.append(len(found))
        for chunk_id, hit in found.items():
            slots.append(slot)
            ids.append(chunk_id)
            tokens.append(hit.tokens)
            fs.append(hit.f)
    return [lexemes, counts, *map(float, weights), slots, ids, tokens, fs]


def best_chunks(
    conn: Any, expression: str, weights: Sequence[float], limit: int
) -> list[tuple[int, int, float]]:
    params = _ranked(conn, Query.parse(expression), weights)
    if params is None:
        return []
    rows = conn.execute(
        f"""SELECT r.chunk_id, c.document_id, r.rank FROM (
                {RANKED} ORDER BY rank, chunk_id LIMIT ?) r
            JOIN chunks c ON c.id = r.chunk_id ORDER BY r.rank, c.document_id, r.chunk_id""",
        (*params, limit),
    )
    return [(int(c), int(d), float(r)) for c, d, r in rows]


def best_chunk_per_document(
    conn: Any,
    expression: str,
    weights: Sequence[float],
    where: str,
    params: Sequence[object],
    limit: int,
) -> list[tuple[int, int, float]]:
    ranked_params = _ranked(conn, Query.parse(expression), weights)
    if ranked_params is None:
        return []
    rows = conn.execute(
        f"""WITH r AS ({RANKED})
            SELECT chunk_id, document_id, rank FROM (
                SELECT DISTINCT ON (c.document_id) r.chunk_id, c.document_id, r.rank
                FROM r JOIN chunks c ON c.id = r.chunk_id
                JOIN documents d ON d.id = c.document_id
                WHERE ({where})
                ORDER BY c.document_id, r.rank, r.chunk_id) best
            ORDER BY rank, document_id LIMIT ?""",
        (*ranked_params, *params, limit),
    )
    return [(int(c), int(d), float(r)) for c, d, r in rows]


def term_matches(
    conn: Any, expressions: Sequence[str], chunk_ids: Sequence[int], *, frequencies: bool
) -> tuple[int | None, list[int] | None, list[set[int]]]:
    """store.keywords.term_matches: the chunk count, each expression's document frequency
    (with `frequencies`) and which of `chunk_ids` each matches, in one statement when every
    expression is made of one-term phrases (a longer phrase reads its positions first)."""
    queries = [Query.parse(e) for e in expressions]
    if any(q.multi for q in queries):
        total = (
            int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0]) if frequencies else None
        )
        found = document_frequencies(conn, expressions) if frequencies else None
        among = [set(matching_among(conn, e, chunk_ids)) for e in expressions]
        return total, found, among
    parts: list[str] = []
    params: list[object] = []
    if frequencies:
        parts.append("SELECT 0, -1, (SELECT count(*) FROM chunks)")
        lexemes = [t for q in queries for t in q.terms]
        slots = [n for n, q in enumerate(queries) for _ in q.terms]
        parts.append(
            """SELECT 0, s.slot, (SELECT count(DISTINCT p.chunk_id) FROM keyword_postings p
                                  WHERE p.lexeme = ANY(s.lexemes))
               FROM (SELECT q.slot, array_agg(q.lexeme) AS lexemes
                     FROM unnest(?::text[], ?::int[]) AS q(lexeme, slot) GROUP BY q.slot) s"""
        )
        params += [lexemes, slots]
    if chunk_ids:
        for n, query in enumerate(queries):
            if not query.terms:
                continue
            parts.append(
                f"""SELECT 1, {n}, p.chunk_id FROM keyword_postings p
                    WHERE p.lexeme = ANY(?::text[]) AND p.chunk_id = ANY(?::bigint[])"""
            )
            params += [query.terms, list(chunk_ids)]
    total, found, among = (
        None,
        [0] * len(queries) if frequencies else None,
        [set() for _ in queries],
    )
    if not parts:
        return total, found, among
    for kind, slot, value in conn.execute(" UNION ALL ".join(parts), params):
        if kind == 1:
            among[slot].add(int(value))
        elif slot < 0:
            total = int(value)
        elif found is not None:
            found[slot] = int(value)
    return total, found, among


def chunk_condition(expression: str) -> tuple[str, list[object]] | None:
    """An SQL truth value: chunk `c` matches the expression; None for one with a phrase of
    several terms (matched through its positions, not in SQL)."""
    query = Query.parse(expression)
    if query.multi:
        return None
    if not query.terms:
        return "FALSE", []
    return (
        "EXISTS (SELECT 1 FROM keyword_postings p WHERE p.lexeme = ANY(?::text[]) "
        "AND p.chunk_id = c.id)",
        [query.terms],
    )
