"""A Japanese–English lexicon for the bilingual keyword bridge (bridge.py): JMdict (the
Electronic Dictionary Research and Development Group, CC BY-SA 4.0) as shipped by the
`jamdict-data` package, reduced once to a small SQLite file of two lookup tables.

The package's database is 325 MB with one row per gloss; a query needs only "which English
phrases translate this Japanese word" and the reverse, so the first use writes those two
tables (about 20 MB, a few seconds) under the user's cache directory, keyed by the data
package's version and this file's format, and every later lookup is one indexed SELECT.
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
import threading
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1  # bump when the reduction below changes: old cache files are then ignored
MAX_TRANSLATIONS = 3  # per source word: more alternatives add noise faster than recall
MAX_GLOSS_WORDS = 4  # longer glosses are explanations, not terms a note would contain
# Senses that a note is unlikely to mean: their glosses are not used.
_SKIP_MISC = {
    "archaism",
    "obsolete term",
    "obscure term",
    "rare term",
    "dated term",
    "vulgar expression or word",
    "Internet slang",
    "proverb",
    "yojijukugo",
    "idiomatic expression",
}
_COMMON = {"news1", "ichi1", "spec1", "spec2", "gai1"}  # JMdict's "common word" marks
_KATAKANA = re.compile(r"[\u30a0-\u30ff]")
_PAREN = re.compile(r"\([^)]*\)")
_LEADING = re.compile(r"^(?:to be |to |a |an |the )")
_GLOSS_STOP = frozenset(
    "a an the of to be do is it in on at as or and one something someone oneself etc".split()
)


@dataclass(frozen=True)
class Lexicon:
    """Lookups in the reduced lexicon; one connection per thread (SQLite objects are not
    shared across threads)."""

    path: Path

    def english(self, japanese: str) -> list[str]:
        """English phrases for a Japanese word, most likely first; [] when unknown."""
        return self._get("SELECT en FROM ja WHERE term = ?", japanese)

    def japanese(self, english: str) -> list[str]:
        """Japanese words for an English phrase (lower case), most likely first."""
        return self._get("SELECT ja FROM en WHERE term = ?", english)

    def _get(self, sql: str, key: str) -> list[str]:
        row = _connection(self.path).execute(sql, (key,)).fetchone()
        return row[0].split("\t") if row else []


_local = threading.local()


def _connection(path: Path) -> sqlite3.Connection:
    conns: dict[Path, sqlite3.Connection] = getattr(_local, "conns", None) or {}
    _local.conns = conns
    conn = conns.get(path)
    if conn is None:
        conn = conns[path] = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, check_same_thread=False
        )
    return conn


_lock = threading.Lock()
_loaded: dict[str, Lexicon | None] = {}


def load_lexicon(cache_dir: Path | None = None) -> Lexicon | None:
    """The reduced lexicon, built at first use; None when `jamdict-data` is not installed
    or cannot be read (the bridge is then off and search goes on without it)."""
    key = str(cache_dir)
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load(cache_dir or default_cache_dir())
        return _loaded[key]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tsm"


def source_database() -> tuple[Path, str] | None:
    """(path, version) of the installed JMdict database, or None."""
    try:
        import jamdict_data
    except ImportError:
        return None
    path = Path(jamdict_data.JAMDICT_DB_PATH)
    return (path, str(jamdict_data.__version__)) if path.is_file() else None


def _load(cache_dir: Path) -> Lexicon | None:
    source = source_database()
    if source is None:
        return None
    src, version = source
    target = cache_dir / f"lexicon-jmdict-{version}-f{FORMAT}.sqlite"
    if not target.is_file():
        try:
            build(src, target)
        except (OSError, sqlite3.Error):
            return None
    return Lexicon(target)


def build(source: Path, target: Path) -> None:
    """Reduce the JMdict database at `source` to the lookup tables at `target`, written to a
    temporary file first so a reader never sees half a lexicon."""
    ja_en, en_ja = reduce_jmdict(sqlite3.connect(f"file:{source}?mode=ro", uri=True))
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".lexicon-", dir=target.parent)
    os.close(fd)
    try:
        with sqlite3.connect(tmp) as out:
            out.execute("CREATE TABLE ja (term TEXT PRIMARY KEY, en TEXT) WITHOUT ROWID")
            out.execute("CREATE TABLE en (term TEXT PRIMARY KEY, ja TEXT) WITHOUT ROWID")
            out.executemany(
                "INSERT INTO ja VALUES (?, ?)",
                ((k, "\t".join(v)) for k, v in sorted(ja_en.items())),
            )
            out.executemany(
                "INSERT INTO en VALUES (?, ?)",
                ((k, "\t".join(v)) for k, v in sorted(en_ja.items())),
            )
        out.close()
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def normalize_gloss(gloss: str) -> str:
    """'(to) accelerate (esp. a vehicle)' → 'accelerate': the phrase a note would contain."""
    text = unicodedata.normalize("NFKC", _PAREN.sub(" ", gloss)).lower()
    text = " ".join(text.replace(";", " ").split())
    while True:
        stripped = _LEADING.sub("", text)
        if stripped == text:
            return text
        text = stripped


def usable_gloss(gloss: str) -> bool:
    words = gloss.split()
    return (
        0 < len(words) <= MAX_GLOSS_WORDS
        and not all(w in _GLOSS_STOP for w in words)
        and all(any(c.isalnum() for c in w) for w in words)
    )


def reduce_jmdict(conn: sqlite3.Connection) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(Japanese word → English phrases, English phrase → Japanese words), each list best
    first and at most MAX_TRANSLATIONS long.

    English phrases of a word come from its senses in JMdict's order (the most frequent
    sense first). The Japanese words of a phrase are ranked by how central the phrase is to
    each entry: first sense before later ones, first gloss before later ones, an entry
    marked common before one that is not; the entry is written as its first spelling (kana
    when JMdict marks it as usually written in kana)."""
    skip = {sid for sid, text in conn.execute("SELECT sid, text FROM misc") if text in _SKIP_MISC}
    kana_usual = {
        sid
        for sid, text in conn.execute("SELECT sid, text FROM misc")
        if text == "word usually written using kana alone"
    }
    common_kanji = {
        kid for kid, text in conn.execute("SELECT kid, text FROM KJP") if text in _COMMON
    }
    common_kana = {
        kid for kid, text in conn.execute("SELECT kid, text FROM KNP") if text in _COMMON
    }
    spellings: dict[int, list[tuple[str, bool]]] = defaultdict(list)  # idseq → (text, common)
    kana: dict[int, list[tuple[str, bool]]] = defaultdict(list)
    for kid, idseq, text in conn.execute("SELECT ID, idseq, text FROM Kanji ORDER BY ID"):
        spellings[idseq].append((_norm(text), kid in common_kanji))
    for kid, idseq, text in conn.execute("SELECT ID, idseq, text FROM Kana ORDER BY ID"):
        kana[idseq].append((_norm(text), kid in common_kana))
    senses: dict[int, list[tuple[int, list[str]]]] = defaultdict(list)
    for sid, idseq, gloss in conn.execute(
        """SELECT s.ID, s.idseq, g.text FROM Sense s JOIN SenseGloss g ON g.sid = s.ID
               WHERE g.lang = 'eng' ORDER BY s.idseq, s.ID, g.rowid"""
    ):
        if not senses[idseq] or senses[idseq][-1][0] != sid:
            senses[idseq].append((sid, []))
        senses[idseq][-1][1].append(gloss)

    ja_en: dict[str, list[str]] = {}
    by_form: dict[str, list[tuple[bool, int, list[str]]]] = defaultdict(list)
    ranked: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for idseq, entry_senses in senses.items():
        forms = spellings.get(idseq, []) + kana.get(idseq, [])
        if not forms:
            continue
        common = any(c for _, c in forms)
        usually_kana = any(sid in kana_usual for sid, _ in entry_senses[:1])
        written = (
            (kana.get(idseq) or forms)[0][0]
            if usually_kana or idseq not in spellings
            else spellings[idseq][0][0]
        )
        # A katakana loanword (プレッシャー) is a weaker rendering of an English phrase than
        # a native word (圧力) in the notes this searches; it still fills a later slot.
        loanword = all(_KATAKANA.match(c) for c in written)
        phrases: list[str] = []
        for sense_no, (sid, glosses) in enumerate(entry_senses):
            if sid in skip:
                continue
            for gloss_no, gloss in enumerate(glosses):
                phrase = normalize_gloss(gloss)
                if not usable_gloss(phrase):
                    continue
                if phrase not in phrases:
                    phrases.append(phrase)
                cost = (
                    sense_no
                    + 0.5 * gloss_no
                    + (0 if common else 2)
                    + 0.3 * (len(glosses) - 1)
                    + (1 if loanword else 0)
                )
                ranked[phrase].append((cost, written))
        if phrases:  # a kana spelling is a key only where the word is written in kana
            keys = forms if usually_kana or idseq not in spellings else spellings[idseq]
            for form, form_common in keys:
                by_form[form].append((not form_common, idseq, phrases))
    for form, entries in by_form.items():  # a spelling shared by entries: common ones first
        known = ja_en[form] = []
        for _, _, phrases in sorted(entries):
            known += [p for p in phrases if p not in known][: MAX_TRANSLATIONS - len(known)]
    en_ja: dict[str, list[str]] = {}
    for phrase, options in ranked.items():
        words: list[str] = []
        for _, word in sorted(options):
            if word not in words:
                words.append(word)
            if len(words) == MAX_TRANSLATIONS:
                break
        en_ja[phrase] = words
    return ja_en, en_ja


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()
