"""The keyword index on PostgreSQL, ranked exactly as SQLite's FTS5 ranks it (store/keywords.py).

Same terms: every column is split into terms by SQLite itself. An in-memory FTS5 table with the
tokenizer of `chunks_fts` and an `fts5vocab` 'instance' table give each text's (term, column,
offset), so stemming, case and diacritics match FTS5 bit for bit with no new dependency; a
query's phrases are split the same way.

Same matches: a row per chunk holds its distinct terms as a `tsvector` (no positions; a GIN index
answers `@@`), each term's occurrences per column (`counts`, JSON) and offsets (`positions`,
JSON), and its token count. A one-term phrase matches where its term is; a phrase of several
terms is looked up as the AND of its terms, then its adjacency checked in Python on the
offsets. Offsets live in JSON, not in the tsvector, because PostgreSQL keeps at most 256
positions per lexeme and none past 16,383, which a long or repetitive chunk exceeds.

Ranking reads an inverted index: `keyword_postings` has a row per (lexeme, chunk) with the
lexeme's count in each column and the chunk's token count, under a btree on (lexeme, chunk),
so a query's one-term phrases are a few index ranges pivoted to a row per chunk, and a term's
document frequency is a count over its range.

Same scores: FTS5's bm25() (sqlite ext/fts5/fts5_aux.c, fts5Bm25Function) computed in SQL with
the same operations in the same order, so equal inputs give the same double (f_i is a count
times a weight where FTS5 adds the weight once per instance: the same for weights that are
multiples of a power of two, as tsm's are; other weights may differ in the last bit):
    score = -sum_i idf_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b |D| / avgdl))
with k1 = 1.2, b = 0.75; i runs over the expression's phrases in order (a repeated phrase
counts each time); f_i the column-weighted count of phrase i's instances in the row; |D| the
row's token count; avgdl the mean token count; idf_i = log((N - n_i + 0.5) / (n_i + 0.5)),
1e-6 when not positive, with n_i the rows that hold phrase i. N and the token total come from
`keyword_totals`, delta rows that a trigger appends on every insert and delete (no row that
concurrent writers would queue on) and folds into one now and then. Ties break as FTS5's do:
by chunk id within a rank, by document id between documents.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# The tokenizer of `chunks_fts` (store/migrations.py, m001); tests/store/test_pg_keywords.py
# checks the two agree.
FTS5_TOKENIZE = "porter unicode61 remove_diacritics 2"
COLUMNS = ("title", "section", "body", "tags")

SCHEMA = """
    CREATE TABLE chunk_keywords (
        chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        lexemes TSVECTOR NOT NULL,
        counts JSONB NOT NULL,
        positions JSONB NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE INDEX chunk_keywords_lexemes ON chunk_keywords USING gin (lexemes);
    CREATE TABLE keyword_postings (
        lexeme TEXT NOT NULL,
        chunk_id BIGINT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
        c0 INTEGER NOT NULL,
        c1 INTEGER NOT NULL,
        c2 INTEGER NOT NULL,
        c3 INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        PRIMARY KEY (lexeme, chunk_id)
    );
    CREATE INDEX keyword_postings_chunk ON keyword_postings (chunk_id);
    CREATE FUNCTION tsm_keyword_rows(q TSQUERY, ids BIGINT[])
        RETURNS TABLE (chunk_id BIGINT, tokens INTEGER, counts JSONB)
        LANGUAGE sql STABLE ROWS 1000 SET enable_seqscan = off
        AS $$ SELECT k.chunk_id, k.tokens, k.counts FROM chunk_keywords k
              WHERE k.lexemes @@ q OR k.chunk_id = ANY(ids) $$;
    CREATE TABLE keyword_totals (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        rows BIGINT NOT NULL,
        tokens BIGINT NOT NULL
    );
    CREATE FUNCTION tsm_keyword_totals() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        n BIGINT;
        t BIGINT;
        s BIGINT;
    BEGIN
        SELECT count(*), coalesce(sum(tokens), 0) INTO n, t FROM changed;
        IF n = 0 THEN
            RETURN NULL;
        END IF;
        IF TG_OP = 'DELETE' THEN
            n := -n;
            t := -t;
        END IF;
        INSERT INTO keyword_totals(rows, tokens) VALUES (n, t) RETURNING seq INTO s;
        IF mod(s, 256) = 0 AND pg_try_advisory_xact_lock(1953721675) THEN
            WITH gone AS (DELETE FROM keyword_totals RETURNING rows, tokens)
            INSERT INTO keyword_totals(rows, tokens)
                SELECT sum(rows), sum(tokens) FROM gone HAVING count(*) > 0;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER chunk_keywords_added AFTER INSERT ON chunk_keywords
        REFERENCING NEW TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION tsm_keyword_totals();
    CREATE TRIGGER chunk_keywords_removed AFTER DELETE ON chunk_keywords
        REFERENCING OLD TABLE AS changed
        FOR EACH STATEMENT EXECUTE FUNCTION tsm_keyword_totals()
"""

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
MAX_LEXEME_BYTES = 2046  # PostgreSQL's limit for a tsvector lexeme


# --- terms, as FTS5 makes them ------------------------------------------------------------


class _Scratch(threading.local):
    conn: sqlite3.Connection | None = None


_scratch = _Scratch()


def _fts5() -> sqlite3.Connection:
    """This thread's in-memory FTS5 table (contentless: only its index is kept)."""
    conn = _scratch.conn
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5({', '.join(COLUMNS)}, content='', "
            f"tokenize = '{FTS5_TOKENIZE}')"
        )
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _scratch.conn = conn
    return conn


def lexeme(term: str) -> str:
    """The index's name for an FTS5 term: the term itself, or for one too long for a tsvector
    a digest ('#' never occurs in an FTS5 term, so the two cannot meet)."""
    if len(term.encode()) <= MAX_LEXEME_BYTES:
        return term
    return "#" + hashlib.sha256(term.encode()).hexdigest()


def _instances(rows: Sequence[Sequence[str]]) -> list[tuple[int, int, int, str]]:
    """(row number, column number, offset, lexeme) of every token of `rows` (each row a
    value per column), as FTS5 tokenizes them."""
    conn = _fts5()
    column = {name: i for i, name in enumerate(COLUMNS)}
    width = len(rows[0]) if rows else 0
    names = ", ".join(COLUMNS[:width])
    marks = ", ".join("?" * width)
    conn.execute("BEGIN")  # rolled back: the table only lends its tokenizer
    try:
        conn.executemany(
            f"INSERT INTO t(rowid, {names}) VALUES (?, {marks})",
            [(n, *row) for n, row in enumerate(rows, start=1)],
        )
        found = [
            (doc, column[col], offset, lexeme(term))
            for term, doc, col, offset in conn.execute("SELECT term, doc, col, offset FROM v")
        ]
    finally:
        conn.execute("ROLLBACK")
    return found


@dataclass(frozen=True)
class KeywordRow:
    """A chunk's keyword row: per lexeme, its count and offsets in each column, and the
    chunk's token count (FTS5's column sizes summed)."""

    counts: dict[str, list[int]]
    positions: dict[str, list[list[int]]]
    tokens: int


def keyword_rows(rows: Sequence[tuple[str, str, str, str]]) -> list[KeywordRow]:
    """The keyword rows of (title, section, body, tags) texts."""
    out = [KeywordRow({}, {}, 0) for _ in rows]
    sizes = [0] * len(rows)
    for doc, col, offset, lex in _instances(rows):
        row = out[doc - 1]
        if lex not in row.counts:
            row.counts[lex] = [0] * len(COLUMNS)
            row.positions[lex] = [[] for _ in COLUMNS]
        row.counts[lex][col] += 1
        row.positions[lex][col].append(offset)
        sizes[doc - 1] += 1
    return [KeywordRow(r.counts, r.positions, n) for r, n in zip(out, sizes, strict=True)]


@lru_cache(maxsize=4096)
def phrase_lexemes(text: str) -> tuple[str, ...]:
    """A quoted phrase's lexemes in order, as FTS5 splits it; () for a phrase of no token,
    which FTS5 drops from the expression."""
    return tuple(lex for _, _, _, lex in sorted(_instances([(text,)])))


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


def tsquery(terms: Sequence[str], operator: str = "|") -> str:
    """A tsquery literal matching `terms` joined by `operator` (each quoted, so the text is
    never parsed as tsquery syntax)."""
    return f" {operator} ".join(
        "'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms
    )


def phrase_count(offsets: Sequence[Sequence[Sequence[int]]], weights: Sequence[float]) -> float:
    """The column-weighted number of instances of a phrase: `offsets[j][c]` are the offsets
    of its j-th lexeme in column c; an instance starts at an offset of the first lexeme whose
    followers sit at the next offsets of the same column (FTS5 counts overlapping instances)."""
    total = 0.0
    for col, weight in enumerate(weights):
        later = [set(lex[col]) for lex in offsets[1:]]
        for start in offsets[0][col]:
            if all(start + j in seen for j, seen in enumerate(later, start=1)):
                total += weight
    return total


# --- writes -------------------------------------------------------------------------------


def insert(conn: Any, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Add the keyword rows of chunks: (chunk id, title, section, body, tags)."""
    if not rows:
        return
    made = keyword_rows([r[1:] for r in rows])
    batch = [
        {"id": r[0], "c": m.counts, "p": m.positions, "n": m.tokens}
        for r, m in zip(rows, made, strict=True)
    ]
    # One JSON text for the batch (psycopg would escape every quote of a text[] parameter),
    # one statement for the chunk rows and the postings.
    conn.execute(
        """WITH r AS MATERIALIZED (
               SELECT * FROM jsonb_to_recordset(?::jsonb)
                   AS r(id BIGINT, c JSONB, p JSONB, n INTEGER)
           ), k AS (
               INSERT INTO chunk_keywords(chunk_id, lexemes, counts, positions, tokens)
               SELECT r.id, array_to_tsvector(ARRAY(SELECT jsonb_object_keys(r.c))), r.c, r.p,
                      r.n
               FROM r
           )
           INSERT INTO keyword_postings(lexeme, chunk_id, c0, c1, c2, c3, tokens)
           SELECT e.key, r.id, (e.value ->> 0)::int, (e.value ->> 1)::int,
                  (e.value ->> 2)::int, (e.value ->> 3)::int, r.n
           FROM r, jsonb_each(r.c) AS e""",
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


@dataclass(frozen=True)
class _Match:
    """The chunks that match a query: those holding one of its one-term phrases (`terms`, a
    tsquery literal, or None) and those holding a longer phrase (`phrase_hits`: per phrase,
    chunk id → the phrase's weighted instance count there)."""

    terms: str | None
    phrase_hits: dict[tuple[str, ...], dict[int, float]]

    @property
    def phrase_ids(self) -> list[int] | None:
        ids = sorted({cid for found in self.phrase_hits.values() for cid in found})
        return ids or None

    @property
    def empty(self) -> bool:
        return self.terms is None and self.phrase_ids is None

    @property
    def rows(self) -> tuple[str, tuple[object, ...]]:
        """A FROM item `k` of the matching rows (chunk_id, tokens, counts), and its parameters.
        Through tsm_keyword_rows, which has the GIN index answer: for an OR of common terms
        the planner prefers a sequential scan, which tests `@@` on every row (7 terms
        matching 25% of scifact's 10,125 chunks: 20-45 ms against 3-5 ms, load 6-9)."""
        return "tsm_keyword_rows(?::tsquery, ?::bigint[]) k", (self.terms, self.phrase_ids)

    @property
    def condition(self) -> tuple[str, tuple[object, ...]]:
        """The same as a condition on a chunk_keywords row `k` (for a few known ids, or a
        single term)."""
        return (
            "(k.lexemes @@ ?::tsquery OR k.chunk_id = ANY(?::bigint[]))",
            (self.terms, self.phrase_ids),
        )


def _match(
    conn: Any,
    query: Query,
    weights: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
    among: Sequence[int] | None = None,
) -> _Match:
    hits = {p: _phrase_hits(conn, p, weights, among) for p in query.multi}
    return _Match(tsquery(query.terms) if query.terms else None, hits)


def _phrase_hits(
    conn: Any, phrase: tuple[str, ...], weights: Sequence[float], among: Sequence[int] | None
) -> dict[int, float]:
    """The chunks that hold `phrase`, each with its weighted instance count."""
    lexemes = list(dict.fromkeys(phrase))
    picks = ", ".join("k.positions -> ?::text" for _ in lexemes)
    if among is None:
        source = "chunk_keywords k WHERE k.lexemes @@ ?::tsquery"
        params: list[object] = [*lexemes, tsquery(lexemes, "&")]
    else:
        source = "chunk_keywords k WHERE k.lexemes @@ ?::tsquery AND k.chunk_id = ANY(?::bigint[])"
        params = [*lexemes, tsquery(lexemes, "&"), list(among)]
    found: dict[int, float] = {}
    for chunk_id, *offsets in conn.execute(f"SELECT k.chunk_id, {picks} FROM {source}", params):
        by_lexeme = dict(zip(lexemes, offsets, strict=True))
        ordered = [by_lexeme[lex] for lex in phrase]
        if phrase_count(ordered, (1.0,) * len(COLUMNS)):  # holds it, whatever the weights
            found[chunk_id] = phrase_count(ordered, weights)
    return found


def matching_chunk_ids(conn: Any, expression: str) -> Iterator[int]:
    match = _match(conn, Query.parse(expression))
    if match.empty:
        return iter(())
    source, params = match.rows
    return (r[0] for r in conn.execute(f"SELECT k.chunk_id FROM {source}", params))


def document_frequency(conn: Any, expression: str) -> int:
    query = Query.parse(expression)
    if not query.multi:
        return document_frequencies(conn, [expression])[0]
    match = _match(conn, query)
    if match.empty:
        return 0
    condition, params = match.condition  # a term or two: the planner picks the index itself
    return int(
        conn.execute(f"SELECT count(*) FROM chunk_keywords k WHERE {condition}", params).fetchone()[
            0
        ]
    )


def document_frequencies(conn: Any, expressions: Sequence[str]) -> list[int]:
    """document_frequency of each expression: those made only of one-term phrases counted
    together in one statement over `keyword_postings` (a count over each term's btree range,
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
        # the planner hash the whole table: 60 ms against 12 for one statement per term).
        rows = conn.execute(
            """SELECT s.slot, (SELECT count(DISTINCT p.chunk_id) FROM keyword_postings p
                               WHERE p.lexeme = ANY(s.lexemes))
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
    condition, params = match.condition
    rows = conn.execute(
        f"""SELECT k.chunk_id FROM chunk_keywords k
            WHERE k.chunk_id = ANY(?::bigint[]) AND {condition}""",
        (list(chunk_ids), *params),
    )
    return (r[0] for r in rows)


def count_matching_documents(
    conn: Any, expression: str, where: str, params: Sequence[object]
) -> int:
    match = _match(conn, Query.parse(expression))
    if match.empty:
        return 0
    source, match_params = match.rows
    return int(
        conn.execute(
            f"""SELECT count(DISTINCT c.document_id) FROM {source}
                JOIN chunks c ON c.id = k.chunk_id JOIN documents d ON d.id = c.document_id
                WHERE ({where})""",
            (*match_params, *params),
        ).fetchone()[0]
    )


# --- ranking ------------------------------------------------------------------------------


def _f8(x: float) -> str:
    """A double as an SQL float8 literal that reads back as the same double."""
    return f"'{float(x)!r}'::float8"


def _ranked(conn: Any, query: Query, weights: Sequence[float]) -> tuple[str, list[object]] | None:
    """SQL for every matching chunk as (chunk_id, rank) with FTS5's bm25() rank, and its
    parameters; None when nothing can match.

    The one-term phrases are read from `keyword_postings` (a btree range per term, one row
    per chunk that holds it, its counts per column and the chunk's token count), pivoted to a
    row per chunk; the chunks that hold only a longer phrase are added with their token count
    from `chunk_keywords`. Reading f_i from JSONB per matching row cost 10x more (scifact:
    bench/results/pg-keywords.md)."""
    if not query.phrases:
        return None
    match = _match(conn, query, weights)
    if match.empty:
        return None
    slots = {p: i for i, p in enumerate(query.distinct)}
    terms = query.terms
    # f_i of a one-term phrase: its counts per column times the weights, added in column
    # order (a weight of 0 adds nothing), as FTS5 adds them.
    weighted = " + ".join(f"p.c{c}::float8 * {_f8(w)}" for c, w in enumerate(weights) if w)
    posting_f = f"({weighted or '0.0::float8'})"
    picks, joins, params_pick, params_join = [], [], [], []
    for phrase, i in slots.items():
        if len(phrase) == 1:
            picks.append(f"max(CASE WHEN q.lexeme = ?::text THEN q.f END) AS h{i}")
            params_pick.append(phrase[0])
        else:
            found = match.phrase_hits[phrase]
            joins.append(
                f"LEFT JOIN unnest(?::bigint[], ?::float8[]) AS p{i}(cid, f) "
                f"ON p{i}.cid = g.chunk_id"
            )
            params_join += [list(found), list(found.values())]
    outer = ", ".join(f"g.h{i}" if len(p) == 1 else f"p{i}.f AS h{i}" for p, i in slots.items())
    source = f"""SELECT p.lexeme, p.chunk_id, p.tokens, {posting_f} AS f
                 FROM keyword_postings p WHERE p.lexeme = ANY(?::text[])
                 UNION ALL
                 SELECT NULL, k.chunk_id, k.tokens, NULL FROM chunk_keywords k
                 WHERE k.chunk_id = ANY(?::bigint[])"""
    grouped_picks = "".join(f", {pick}" for pick in picks)

    # Each f_i and n_i computed once per row (in the materialized f), then used twice.
    per_row = ", ".join(
        f"coalesce(h{i}, 0.0::float8) AS f{i}, count(h{i}) OVER () AS n{i}"
        for p, i in slots.items()
    )
    denominator = f"({_f8(K1)} * ({_f8(1 - B)} + {_f8(B)} * f.tokens::float8 / t.avgdl))"
    score = "0.0::float8"
    for phrase in query.phrases:  # FTS5's order: one term per phrase, repeats included
        i = slots[phrase]
        idf = (
            f"(CASE WHEN ln((t.n - n{i} + 0.5::float8) / (n{i} + 0.5::float8)) <= 0 "
            f"THEN {_f8(IDF_FLOOR)} "
            f"ELSE ln((t.n - n{i} + 0.5::float8) / (n{i} + 0.5::float8)) END)"
        )
        score = f"({score} + {idf} * ((f{i} * {_f8(K1 + 1.0)}) / (f{i} + {denominator})))"
    sql = f"""
        WITH m AS MATERIALIZED (
            SELECT g.chunk_id, g.tokens, {outer}
            FROM (SELECT q.chunk_id, max(q.tokens) AS tokens{grouped_picks}
                  FROM ({source}) q GROUP BY q.chunk_id) g {" ".join(joins)}
        ), f AS MATERIALIZED (SELECT m.chunk_id, m.tokens, {per_row} FROM m),
        t AS (
            SELECT sum(rows)::float8 AS n, sum(tokens)::float8 / sum(rows)::float8 AS avgdl
            FROM keyword_totals
        )
        SELECT f.chunk_id, {_f8(-1.0)} * {score} AS rank FROM f, t"""
    return sql, [*params_pick, terms, match.phrase_ids, *params_join]


def best_chunks(
    conn: Any, expression: str, weights: Sequence[float], limit: int
) -> list[tuple[int, int, float]]:
    ranked = _ranked(conn, Query.parse(expression), weights)
    if ranked is None:
        return []
    sql, params = ranked
    rows = conn.execute(
        f"""SELECT r.chunk_id, c.document_id, r.rank FROM (
                {sql} ORDER BY rank, chunk_id LIMIT ?) r
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
    ranked = _ranked(conn, Query.parse(expression), weights)
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
                f"""SELECT 1, {n}, k.chunk_id FROM chunk_keywords k
                    WHERE k.chunk_id = ANY(?::bigint[]) AND k.lexemes @@ ?::tsquery"""
            )
            params += [list(chunk_ids), tsquery(query.terms)]
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
        "EXISTS (SELECT 1 FROM chunk_keywords k WHERE k.chunk_id = c.id "
        "AND k.lexemes @@ ?::tsquery)",
        [tsquery(query.terms)],
    )
