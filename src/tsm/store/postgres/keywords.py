"""The keyword index on PostgreSQL, ranked exactly as SQLite's FTS5 ranks it (store/keywords.py).

Same terms: every column is split into terms by SQLite itself. An in-memory FTS5 table with the
tokenizer of `chunks_fts` and an `fts5vocab` 'instance' table give a text's terms in order, so
stemming, case and diacritics match FTS5 bit for bit with no new dependency. The columns come
pre-tokenized (words separated by white space, which FTS5 also splits at), so each distinct word
is split once and remembered: a chunk's terms are then dictionary look-ups. A writer sends
a chunk's terms only, and the server counts its postings from them (POSTINGS).

The index: `keyword_postings` has a row per (lexeme, chunk) with the lexeme's count in each
column, the chunk's token count and its document, and its primary key carries them all
(INCLUDE), so a term's postings are one range of the btree read by an index-only scan, and a
ranking names each hit's document without reading `chunks`. `chunk_keywords` has a
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

One statement ranks (`_ranked_statement`): per phrase, a LATERAL index range of its postings
and a count of that range (n_i), summed per chunk in phrase order, N and avgdl from
`keyword_totals`. Its text is one of two (with or without phrases of several terms) and
never changes otherwise; the terms, weights and the phrases' matches are bound parameters,
so the server plans each once per connection (psycopg prepares it after a few runs, and its
generic plan is the same index ranges). A phrase of several terms is matched in the same
statement: the chunks that hold all its terms (their postings), whose stored terms then show
them adjacent and in order (a regular expression), so a search's keyword reads are one round
trip each whatever its phrases.

Expressions are those of search/fts.py and search/bridge.py: double-quoted phrases joined by
OR, with parentheses. Anything else (AND, NOT, bare words, prefixes) is refused (ValueError):
nothing in tsm writes it, and its bm25() would differ.

psycopg is never imported here: the functions take the store's connection
(store/postgres/connection.py).
The ranking functions return (chunk id, document id, rank) tuples, which store/keywords.py
makes KeywordMatch (this module is imported by it, not the other way round).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
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


_known: dict[str, str] = {}  # words seen, each with its lexemes joined by spaces


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
    if len(term) <= MAX_LEXEME_BYTES // 4 or len(term.encode()) <= MAX_LEXEME_BYTES:
        return term  # (a character is at most 4 bytes: most terms need no encoding)
    return "#" + hashlib.sha256(term.encode()).hexdigest()


def _split(texts: Sequence[str]) -> list[tuple[str, ...]]:
    """The lexemes of each text in order, as FTS5 tokenizes it."""
    conn = _fts5()
    conn.execute("BEGIN")  # rolled back: the table only lends its tokenizer
    try:
        conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", enumerate(texts, start=1))
        found = conn.execute("SELECT doc, term FROM v ORDER BY doc, offset").fetchall()
    finally:
        conn.execute("ROLLBACK")
    out: list[list[str]] = [[] for _ in texts]
    for doc, term in found:
        out[doc - 1].append(lexeme(term))
    return [tuple(terms) for terms in out]


def _learn(words: Iterable[str]) -> dict[str, str]:
    """A map holding every one of `words` with its lexemes joined by spaces: those not seen
    yet are split, all in one pass of the tokenizer. A full cache is replaced, not emptied,
    so the map another thread holds stays whole."""
    global _known
    known = _known
    wanted = set(words)
    new = list(wanted.difference(known))  # by look-ups in `known`, never a copy of it
    if not new:
        return known
    if len(known) + len(new) > WORD_CACHE_SIZE:
        known, new = {}, list(wanted)
    known.update(zip(new, map(" ".join, _split(new)), strict=True))
    _known = known
    return known


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


# --- writes -------------------------------------------------------------------------------


def stored_terms(rows: Sequence[Sequence[str]]) -> list[tuple[str, int]]:
    """Each chunk's stored terms (a newline between columns, a space between terms) and
    token count, from its (title, section, body, tags) texts: all a writer sends of its
    keyword rows, since the server counts the postings from the terms (POSTINGS). Each word
    is a look-up; the words not seen yet are split first, all of them at once."""
    known = _known
    out = []
    for row in rows:
        columns = []
        for text in row:
            words = text.split()
            try:
                found = list(map(known.__getitem__, words))
            except KeyError:
                known = _learn(w for r in rows for t in r for w in t.split())
                found = list(map(known.__getitem__, words))
            if "" in found:  # a word of no term (punctuation alone)
                found = [terms for terms in found if terms]
            columns.append(" ".join(found))
        out.append(("\n".join(columns), sum(c.count(" ") + 1 for c in columns if c)))
    return out


# A chunk's postings, counted by the server from its stored terms `{terms}`: the columns
# split at the newlines, each into its lexemes at the spaces, one row per lexeme with its
# count in each column. What the server reads this way is half what it read as the lexemes
# and counts listed in JSON, and the client has nothing left to count.
POSTINGS = """
    SELECT w.lexeme, count(*) FILTER (WHERE col.k = 1)::int AS c0,
           count(*) FILTER (WHERE col.k = 2)::int AS c1,
           count(*) FILTER (WHERE col.k = 3)::int AS c2,
           count(*) FILTER (WHERE col.k = 4)::int AS c3
    FROM unnest(string_to_array({terms}, E'\\n')) WITH ORDINALITY AS col(text, k),
         string_to_table(col.text, ' ') AS w(lexeme)
    GROUP BY w.lexeme"""


def insert(conn: Any, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Add the keyword rows of chunks: (chunk id, title, section, body, tags)."""
    if not rows:
        return
    made = stored_terms([r[1:] for r in rows])
    # One statement for the chunk rows and the postings. Each chunk's document is looked up
    # by its key (a subquery per chunk): as a join, the planner scanned every chunk stored.
    conn.execute(
        f"""WITH r AS MATERIALIZED (
               SELECT r.id, r.t, r.n,
                      (SELECT c.document_id FROM chunks c WHERE c.id = r.id) AS document_id
               FROM unnest(?::bigint[], ?::text[], ?::int[]) AS r(id, t, n)
           ), k AS (
               INSERT INTO chunk_keywords(chunk_id, terms, tokens) SELECT r.id, r.t, r.n FROM r
           )
           INSERT INTO keyword_postings(lexeme, chunk_id, document_id, c0, c1, c2, c3, tokens)
           SELECT e.lexeme, r.id, r.document_id, e.c0, e.c1, e.c2, e.c3, r.n
           FROM r CROSS JOIN LATERAL ({POSTINGS.format(terms="r.t")}) e""",
        ([r[0] for r in rows], [t for t, _ in made], [n for _, n in made]),
    )


def delete_document(conn: Any, doc_id: int) -> None:
    """The keyword rows of a document's chunks; their postings follow (migration m005)."""
    conn.execute(
        """DELETE FROM chunk_keywords
           WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = ?)""",
        (doc_id,),
    )


def settle(conn: Any) -> None:
    """VACUUM the postings. The ranking reads a term's postings by an index-only scan, which
    must fetch the table's page of every posting whose page the visibility map does not yet
    mark all-visible; only a vacuum marks it, and autovacuum waits until a fifth of the table
    is new, so the last part of a bulk index would stay off the map (one page in seven at
    100k chunks). Insert-only pages are all a vacuum reads here (the map skips the others),
    and SKIP_LOCKED leaves the table to a vacuum already at work on it.

    The store commits without waiting for the disk (connection.connect), and a vacuum may
    not count a row as committed before its commit is on disk: one write committed with the
    wait (a zero row of the totals, which add up the same) puts every earlier commit there."""
    conn.execute("BEGIN")
    conn.execute("SET LOCAL synchronous_commit = on")
    conn.execute("INSERT INTO keyword_totals(rows, tokens) VALUES (0, 0)")
    conn.execute("COMMIT")
    conn.execute("VACUUM (SKIP_LOCKED) keyword_postings")


# --- matching -----------------------------------------------------------------------------
#
# Every statement below answers in one round trip, phrases of several lexemes included: the
# server finds the chunks that hold all of a phrase's lexemes (their postings), then checks in
# their stored terms that the lexemes are adjacent and in order in one column (a regular
# expression per phrase, `phrase_pattern`), and counts the instances per column where a score
# needs them. The phrases are bound parameters, so each statement's text never changes.

_META = re.compile(r"([\\^$.|?*+()\[\]{}])")


def phrase_pattern(phrase: Sequence[str]) -> str:
    """A regular expression (PostgreSQL's) that finds each instance of a phrase of several
    lexemes in a chunk's stored terms: its first lexeme where a term starts, followed by the
    others as the next terms of the same column (terms are separated by a space, columns by
    a newline). The rest is a lookahead, so overlapping instances each count, as in FTS5."""
    first, *rest = (_META.sub(r"\\\1", t) for t in phrase)
    return "(?:^|[ \n])" + first + "(?= " + " ".join(rest) + "(?:[ \n]|$))"


# The phrases asked about, numbered (`slot`) in order, each with the number of the
# expression it belongs to. Parameters: the expressions' numbers, the phrases' lexemes joined
# by spaces, the patterns of those of several lexemes (phrase_pattern; NULL for one lexeme).
_PHRASES = """phrases AS MATERIALIZED (
        SELECT q.expr, q.slot, string_to_array(q.phrase, ' ') AS lex, q.pattern
        FROM unnest(?::int[], ?::text[], ?::text[]) WITH ORDINALITY
            AS q(expr, phrase, pattern, slot)
    )"""

# The chunks that hold each phrase of several lexemes, with their stored terms.
_HOLDERS = """holders AS MATERIALIZED (
        SELECT ph.expr, ph.slot, ph.pattern, k.chunk_id, have.document_id, k.tokens, k.terms
        FROM phrases ph
        CROSS JOIN LATERAL (
            SELECT p.chunk_id, p.document_id FROM keyword_postings p WHERE p.lexeme = ANY(ph.lex)
            GROUP BY p.chunk_id, p.document_id
            HAVING count(*) = (SELECT count(DISTINCT l) FROM unnest(ph.lex) AS l)) have
        JOIN chunk_keywords k ON k.chunk_id = have.chunk_id
        WHERE cardinality(ph.lex) > 1 AND k.terms ~ ph.pattern
    )"""

# The chunks that match each expression (`e`): the postings of its one-lexeme phrases, and
# the holders of its longer ones; a chunk may come more than once.
_EXPRESSION_CHUNKS = """
        SELECT p.chunk_id FROM phrases ph CROSS JOIN LATERAL (
            SELECT p.chunk_id FROM keyword_postings p WHERE p.lexeme = ph.lex[1]) p
        WHERE ph.expr = e.expr AND cardinality(ph.lex) = 1
        UNION ALL
        SELECT h.chunk_id FROM holders h WHERE h.expr = e.expr"""

# Each expression's document frequency: a single phrase's chunks are distinct already (one
# posting per chunk, one holder row per chunk), so only an OR of several is deduplicated.
_FREQUENCIES = f"""
        SELECT e.expr, CASE WHEN e.phrases = 1 THEN (SELECT count(*) FROM ({_EXPRESSION_CHUNKS}) m)
                            ELSE (SELECT count(DISTINCT m.chunk_id) FROM ({_EXPRESSION_CHUNKS}) m)
                       END AS n
        FROM (SELECT expr, count(*) AS phrases FROM phrases GROUP BY expr) e"""

# The matching chunks of all the phrases.
_MATCHING = """
        SELECT p.chunk_id FROM phrases ph CROSS JOIN LATERAL (
            SELECT p.chunk_id FROM keyword_postings p WHERE p.lexeme = ph.lex[1]) p
        WHERE cardinality(ph.lex) = 1
        UNION SELECT h.chunk_id FROM holders h"""


def _phrase_params(queries: Sequence[Query]) -> list[object]:
    """The parameters of _PHRASES for these queries' phrases, numbered by query."""
    exprs: list[int] = []
    texts: list[str] = []
    patterns: list[str | None] = []
    for n, query in enumerate(queries):
        for phrase in query.phrases:
            exprs.append(n)
            texts.append(" ".join(phrase))
            patterns.append(phrase_pattern(phrase) if len(phrase) > 1 else None)
    return [exprs, texts, patterns]


def matching_chunk_ids(conn: Any, expression: str) -> Iterator[int]:
    """The ids as one array: a common word's thousands of matches cost one row to read, not
    a row each."""
    query = Query.parse(expression)
    if not query.phrases:
        return iter(())
    sql = f"WITH {_PHRASES}, {_HOLDERS} SELECT array_agg(m.chunk_id) FROM ({_MATCHING}) m"
    (ids,) = conn.execute(sql, _phrase_params([query])).fetchone()
    return iter(ids or ())


def document_frequency(conn: Any, expression: str) -> int:
    return document_frequencies(conn, [expression])[0]


def document_frequencies(conn: Any, expressions: Sequence[str]) -> list[int]:
    """document_frequency of each expression, in one statement: a count over each one-term
    phrase's index range, the distinct chunks where an expression has several phrases."""
    queries = [Query.parse(e) for e in expressions]
    out = [0] * len(queries)
    if not any(q.phrases for q in queries):
        return out
    rows = conn.execute(f"WITH {_PHRASES}, {_HOLDERS} {_FREQUENCIES}", _phrase_params(queries))
    for expr, count in rows:
        out[int(expr)] = int(count)
    return out


def matching_among(conn: Any, expression: str, chunk_ids: Sequence[int]) -> Iterator[int]:
    if not chunk_ids:
        return iter(())
    query = Query.parse(expression)
    if not query.phrases:
        return iter(())
    rows = _term_match_rows(conn, [query], chunk_ids, frequencies=False)
    return iter({int(chunk_id) for kind, _, chunk_id in rows if kind == 1})


def count_matching_documents(
    conn: Any, expression: str, where: str, params: Sequence[object]
) -> int:
    query = Query.parse(expression)
    if not query.phrases:
        return 0
    return int(
        conn.execute(
            f"""WITH {_PHRASES}, {_HOLDERS}
                SELECT count(DISTINCT c.document_id) FROM ({_MATCHING}) m
                JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.document_id
                WHERE ({where})""",
            (*_phrase_params([query]), *params),
        ).fetchone()[0]
    )


# --- ranking ------------------------------------------------------------------------------


def _f8(x: float) -> str:
    """A double as an SQL float8 literal that reads back as the same double."""
    return f"'{float(x)!r}'::float8"


def _column_count(column: int) -> str:
    """A holder's instances of its phrase in one column (1-based)."""
    return (
        f"(SELECT count(*) FROM regexp_matches(split_part(h.terms, chr(10), {column}), "
        "h.pattern, 'g'))::float8"
    )


def _ranked_statement(longer_phrases: bool) -> str:
    """Every matching chunk as (chunk_id, document_id, rank), FTS5's bm25() rank. Parameters:
    those of _PHRASES (the phrases in order, repeats included), then the four column weights.
    n_i is a one-term phrase's index range counted, or a longer phrase's holders counted.

    Without `longer_phrases` the statement ranks only one-term phrases: most queries have no
    other, and the phrase matching left out is half of what planning the statement costs.
    The rows it hits pass through a subquery the planner keeps (OFFSET 0), so each row's
    weighted count is computed once, not again inside the sum where it is used twice."""
    holders = f"{_HOLDERS}, " if longer_phrases else ""
    count = "(SELECT count(*) FROM keyword_postings c WHERE c.lexeme = ph.lex[1])"
    if longer_phrases:
        count = f"""CASE WHEN cardinality(ph.lex) = 1
                   THEN {count}
                   ELSE (SELECT count(*) FROM holders h WHERE h.slot = ph.slot) END"""
    longer_hits = (
        f"""
        UNION ALL
        SELECT h.slot, phrase.idf, h.chunk_id, h.document_id, h.tokens,
               {_column_count(1)} * weight.w0 + {_column_count(2)} * weight.w1
               + {_column_count(3)} * weight.w2 + {_column_count(4)} * weight.w3 AS f
        FROM holders h JOIN phrase ON phrase.slot = h.slot CROSS JOIN weight"""
        if longer_phrases
        else "\n        OFFSET 0"
    )
    return f"""
    WITH total AS (
        SELECT sum(rows)::float8 AS n, sum(tokens)::float8 / sum(rows)::float8 AS avgdl
        FROM keyword_totals
    ), {_PHRASES}, {holders}counted AS MATERIALIZED (
        SELECT ph.slot, ph.lex, ({count})::float8 AS n
        FROM phrases ph
    ), phrase AS (
        SELECT q.slot, q.lex,
               CASE WHEN ln((total.n - q.n + 0.5::float8) / (q.n + 0.5::float8)) <= 0
                    THEN {_f8(IDF_FLOOR)}
                    ELSE ln((total.n - q.n + 0.5::float8) / (q.n + 0.5::float8)) END AS idf
        FROM counted q CROSS JOIN total
    ), weight AS (
        SELECT ?::float8 AS w0, ?::float8 AS w1, ?::float8 AS w2, ?::float8 AS w3
    ), hit AS (
        SELECT phrase.slot, phrase.idf, p.chunk_id, p.document_id, p.tokens,
               p.c0::float8 * weight.w0 + p.c1::float8 * weight.w1 + p.c2::float8 * weight.w2
               + p.c3::float8 * weight.w3 AS f
        FROM phrase CROSS JOIN weight
        CROSS JOIN LATERAL (
            SELECT p.chunk_id, p.document_id, p.tokens, p.c0, p.c1, p.c2, p.c3
            FROM keyword_postings p WHERE p.lexeme = phrase.lex[1]) p
        WHERE cardinality(phrase.lex) = 1{longer_hits}
    )
    SELECT hit.chunk_id, hit.document_id,
           {_f8(-1.0)} * sum(
               hit.idf * ((hit.f * {_f8(K1 + 1.0)})
                          / (hit.f + {_f8(K1)}
                             * ({_f8(1 - B)} + {_f8(B)} * hit.tokens::float8 / total.avgdl)))
               ORDER BY hit.slot) AS rank
    FROM hit CROSS JOIN total GROUP BY hit.chunk_id, hit.document_id"""


RANKED = _ranked_statement(longer_phrases=True)
RANKED_ONE_TERM = _ranked_statement(longer_phrases=False)


def _ranked(query: Query, weights: Sequence[float]) -> tuple[str, list[object]] | None:
    """The ranking statement for a query and its parameters; None when it has no phrase."""
    if not query.phrases:
        return None
    sql = RANKED if query.multi else RANKED_ONE_TERM
    return sql, [*_phrase_params([query]), *map(float, weights)]


def best_chunks(
    conn: Any, expression: str, weights: Sequence[float], limit: int
) -> list[tuple[int, int, float]]:
    ranked = _ranked(Query.parse(expression), weights)
    if ranked is None:
        return []
    sql, params = ranked
    rows = conn.execute(
        f"""SELECT chunk_id, document_id, rank FROM ({sql} ORDER BY rank, chunk_id LIMIT ?) r
            ORDER BY rank, document_id, chunk_id""",
        (*params, limit),
    )
    return [(int(c), int(d), float(r)) for c, d, r in rows]


def best_chunks_and_matches(
    conn: Any, expression: str, weights: Sequence[float], limit: int
) -> tuple[list[tuple[int, int, float]], Callable[[], list[int]]]:
    """best_chunks, and the id of every matching chunk (matching_chunk_ids), in one
    statement: the ranking has every match in hand, so the count that follows a full
    ranking costs neither a round trip nor a second pass over the phrases. The ids come as
    one array, in a last row of their own."""
    ranked = _ranked(Query.parse(expression), weights)
    if ranked is None:
        return [], lambda: []
    sql, params = ranked
    rows = conn.execute(
        f"""WITH r AS MATERIALIZED ({sql})
            SELECT b.chunk_id, b.document_id, b.rank, NULL::bigint[] FROM (
                SELECT chunk_id, document_id, rank FROM r ORDER BY rank, chunk_id LIMIT ?) b
            UNION ALL SELECT NULL, NULL, NULL, (SELECT array_agg(chunk_id) FROM r)
            ORDER BY 3, 2, 1""",
        (*params, limit),
    ).fetchall()
    *ranked, (_, _, _, ids) = rows
    matching = list(ids or ())
    return [(int(c), int(d), float(r)) for c, d, r, _ in ranked], lambda: matching


def best_chunk_per_document(
    conn: Any,
    expression: str,
    weights: Sequence[float],
    where: str,
    params: Sequence[object],
    limit: int,
) -> list[tuple[int, int, float]]:
    ranked = _ranked(Query.parse(expression), weights)
    if ranked is None:
        return []
    sql, ranked_params = ranked
    rows = conn.execute(
        f"""WITH r AS ({sql})
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


# Which of some chunks (`?`) each expression matches.
_AMONG = """
        SELECT 1, ph.expr, p.chunk_id FROM phrases ph CROSS JOIN LATERAL (
            SELECT p.chunk_id FROM keyword_postings p
            WHERE p.lexeme = ph.lex[1] AND p.chunk_id = ANY(?::bigint[])) p
        WHERE cardinality(ph.lex) = 1
        UNION ALL
        SELECT 1, h.expr, h.chunk_id FROM holders h WHERE h.chunk_id = ANY(?::bigint[])"""


def term_match_rows(
    conn: Any, expressions: Sequence[str], chunk_ids: Sequence[int], *, frequencies: bool
) -> Iterable[tuple[int, int, int]]:
    """store.keywords.term_matches' rows: the chunk count, each expression's document
    frequency (with `frequencies`) and which of `chunk_ids` each matches, in one statement."""
    return _term_match_rows(
        conn, [Query.parse(e) for e in expressions], chunk_ids, frequencies=frequencies
    )


def _term_match_rows(
    conn: Any, queries: Sequence[Query], chunk_ids: Sequence[int], *, frequencies: bool
) -> Iterable[tuple[int, int, int]]:
    parts: list[str] = []
    params: list[object] = []
    if frequencies:
        parts.append("SELECT 0, -1, (SELECT count(*) FROM chunks)")
        parts.append(f"SELECT 0, f.expr, f.n FROM ({_FREQUENCIES}) f")
    if chunk_ids:
        parts.append(_AMONG)
        params += [list(chunk_ids), list(chunk_ids)]
    if not parts:
        return ()
    sql = f"WITH {_PHRASES}, {_HOLDERS} " + " UNION ALL ".join(parts)
    return conn.execute(sql, [*_phrase_params(queries), *params])


def chunk_condition(expression: str) -> tuple[str, list[object]] | None:
    """An SQL truth value: chunk `c` matches the expression (a posting of one of its
    one-term phrases, or an instance of a longer one in its stored terms)."""
    query = Query.parse(expression)
    tests: list[str] = []
    params: list[object] = []
    if query.terms:
        tests.append(
            "EXISTS (SELECT 1 FROM keyword_postings p WHERE p.lexeme = ANY(?::text[]) "
            "AND p.chunk_id = c.id)"
        )
        params.append(query.terms)
    if query.multi:
        tests.append(
            "EXISTS (SELECT 1 FROM chunk_keywords k WHERE k.chunk_id = c.id "
            "AND k.terms ~ ANY(?::text[]))"
        )
        params.append([phrase_pattern(p) for p in query.multi])
    if not tests:
        return "FALSE", []
    return "(" + " OR ".join(tests) + ")", params
