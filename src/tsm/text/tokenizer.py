"""Text → FTS terms. Japanese runs go through a morphological analyzer (SudachiPy, split mode
A, so compounds are found by their parts, indexed by their normalized form so 作っ and 作る
meet); everything else is NFKC-normalised, case-folded and left to FTS5's `porter unicode61`
tokenizer. Queries are tokenized the same way. The choice is measured in docs/architecture.md."""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from ..pagecache import leave_to_page_cache

# Hiragana, katakana (incl. ー), CJK ideographs and iteration marks: runs handed to the analyzer.
_JA_RUN = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ヶ]+")
_WORD = re.compile(r"\w+", re.UNICODE)
# Parts of speech that carry no topic: particles, auxiliaries, punctuation, blanks. (Not 記号:
# some dictionaries tag real words such as 鹿 or ヶ with it.)
_DROP_POS = {"助詞", "助動詞", "補助記号", "空白"}
_MAX_RUN = 2000  # SudachiPy rejects very long inputs; runs are split well below its limit

ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i if in into is it its of on or "
    "our she so such than that the their them then there these they this to was we were what "
    "when where which who whom why will with you your do does did not no can could would should "
    "how about".split()
)


def normalize(text: str) -> str:
    """NFKC (full-width → half-width, compatibility forms) and case folding. A capital I
    with a dot (İ) folds to a plain i: lower() leaves a combining dot after it, which
    splits the word for the query's word pattern and which FTS5 drops from the notes anyway."""
    return unicodedata.normalize("NFKC", text).lower().replace("i\u0307", "i")


class JapaneseTokenizer:
    """Thread-safe wrapper: SudachiPy refuses concurrent use of one tokenizer object, so
    each call borrows one from a pool. A pool, not one per thread: the daemon answers each
    connection on a new thread, and loading a dictionary costs ~36 ms, which every Japanese
    query (and, through the bilingual bridge, every English one) paid in the daemon."""

    name = "sudachi-core-A"

    def __init__(self, user_dict: Path | None = None) -> None:
        self._user_dict = user_dict if user_dict and user_dict.is_file() else None
        self._lock = threading.Lock()
        self._idle: list[Any] = []

    @contextmanager
    def _analyzer(self) -> Iterator[_Analyzer]:
        with self._lock:
            analyzer = self._idle.pop() if self._idle else None
        if analyzer is None:
            from sudachipy import Config, Dictionary, SplitMode

            config = Config(user=[str(self._user_dict)]) if self._user_dict else None
            try:
                dictionary = (
                    Dictionary(dict="core", config=config) if config else Dictionary(dict="core")
                )
            except Exception as exc:
                if config is None:
                    raise
                # A `.tsm/user_dict.dic` a cloned repository shipped, or a broken build.
                from ..errors import ConfigError

                raise ConfigError(
                    f"{self._user_dict}: cannot load the user dictionary: {exc}",
                    "remove it; tsm builds it again from user_dict.csv",
                ) from None
            analyzer = _Analyzer.of(dictionary, dictionary.tokenizer(mode=SplitMode.A))
            # Opening reads 72 of the dictionary's 192 MB, which tokenizing hardly touches
            # again: leave them to the page cache (pagecache.py) rather than in this RSS.
            # Under the lock `release` clears the pool with: a mapping it unmaps between
            # the listing and the advice could be another allocation's by then.
            with self._lock:
                leave_to_page_cache(system_dictionary())
        try:
            yield analyzer
        finally:
            with self._lock:
                self._idle.append(analyzer)

    def trim(self) -> None:
        """Unmap the dictionary pages this process holds resident (they stay in the page
        cache): after indexing, which touches far more of the dictionary than searches do."""
        if self._idle:
            leave_to_page_cache(system_dictionary())

    def release(self) -> None:
        """Drop the idle analyzers, and with them the dictionary's ~90 MB of mapped pages: a
        process about to embed a vault needs the memory for the model more. The next call
        loads a dictionary again (~36 ms)."""
        with self._lock:
            self._idle.clear()

    def ja_terms(self, run: str) -> list[str]:
        with self._analyzer() as analyzer:
            return analyzer.terms(run)

    def morphemes(self, run: str) -> list[Any]:
        """SudachiPy morphemes of a Japanese run, particles included: the bilingual bridge
        (search/bridge.py) looks compounds up by their parts' surfaces."""
        with self._analyzer() as analyzer:
            return [
                m
                for start in range(0, len(run), _MAX_RUN)
                for m in analyzer.tokenizer.tokenize(run[start : start + _MAX_RUN])
            ]

    def index_text(self, text: str) -> str:
        """Text for an FTS5 column: Japanese runs replaced by space-separated terms."""
        text = normalize(text)
        if not _JA_RUN.search(text):  # no dictionary to load for a text without Japanese
            return text
        with self._analyzer() as analyzer:
            return _JA_RUN.sub(lambda m: " " + " ".join(analyzer.terms(m.group())) + " ", text)

    def query_terms(self, text: str) -> list[str]:
        """Distinct search terms of a user query, in order; English stopwords dropped."""
        text = normalize(text)
        terms: list[str] = []
        pos = 0
        for match in _JA_RUN.finditer(text):
            terms += _latin_terms(text[pos : match.start()])
            terms += self.ja_terms(match.group())
            pos = match.end()
        terms += _latin_terms(text[pos:])
        return list(dict.fromkeys(t for t in terms if t))


class _Analyzer(NamedTuple):
    """One SudachiPy tokenizer and what reading its output cheaply needs: the ids of the
    parts of speech to drop (an int per morpheme, where `part_of_speech()` builds a tuple
    of six strings) and a result list that each call fills again instead of allocating."""

    tokenizer: Any
    dropped: frozenset[int]
    out: Any

    @classmethod
    def of(cls, dictionary: Any, tokenizer: Any) -> _Analyzer:
        dropped = set()
        pos_id = 0
        while (pos := dictionary.pos_of(pos_id)) is not None:  # user dictionaries add some
            if pos[0] in _DROP_POS:
                dropped.add(pos_id)
            pos_id += 1
        return cls(tokenizer, frozenset(dropped), tokenizer.tokenize(""))

    def terms(self, run: str) -> list[str]:
        """The normalized forms of a Japanese run's content words, in order."""
        terms: list[str] = []
        dropped, tokenize, out = self.dropped, self.tokenizer.tokenize, self.out
        for start in range(0, len(run), _MAX_RUN):
            for morpheme in tokenize(run[start : start + _MAX_RUN], out=out):
                if morpheme.part_of_speech_id() in dropped:
                    continue
                surface = morpheme.surface()
                # Most surfaces are all letters: one C call decides; the rest are checked
                # letter by letter (a word glued to a middle dot is still a word).
                if surface.isalnum() or any(c.isalnum() for c in surface):
                    terms.append(morpheme.normalized_form())
        return terms


def _latin_terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w not in ENGLISH_STOPWORDS]


def system_dictionary() -> Path:
    """Sudachi's system dictionary file (sudachidict-core's)."""
    import sudachidict_core

    return Path(sudachidict_core.__file__).parent / "resources" / "system.dic"


def compiled_user_dict(state_dir: Path) -> Path | None:
    """`<state dir>/user_dict.csv` (Sudachi's user-dictionary CSV) compiled to user_dict.dic,
    rebuilt when the CSV is newer. Changing it changes tokenization: run `tsm reindex fts`."""
    source, compiled = state_dir / "user_dict.csv", state_dir / "user_dict.dic"
    if not os.path.lexists(source):
        return None
    from ..statedir import is_state_file

    if not is_state_file(source):
        # A cloned repository's `.tsm/user_dict.csv -> ~/.ssh/id_rsa` (or /dev/zero) would
        # be read by the build, and its lines quoted in the error.
        from ..errors import ConfigError

        raise ConfigError(
            f"{source} is a symlink or not a regular file; tsm reads only the file itself",
            "replace the link with the CSV, or remove it",
        )
    if is_state_file(compiled) and compiled.stat().st_mtime >= source.stat().st_mtime:
        return compiled
    import subprocess

    from ..errors import ConfigError
    from ..launcher import python
    from ..statedir import private_dir

    private_dir(state_dir)  # ours, 0700, not a symlink: the build writes into it
    system = system_dictionary()
    # Absolute paths: a relative state dir such as "-x" must not read as an option.
    source, partial = source.absolute(), compiled.absolute().with_name("user_dict.dic.tmp")
    partial.unlink(missing_ok=True)  # ubuild refuses to overwrite; a planted link goes too
    build = (
        "import sys; from sudachipy.command_line import main; "
        "sys.argv = ['sudachipy', 'ubuild', '-s', sys.argv[1], '-o', sys.argv[2], "
        "sys.argv[3]]; main()"
    )
    proc = subprocess.run(
        python("-c", build, str(system), str(partial), str(source)),
        capture_output=True,
        text=True,
        umask=0o077,
    )  # born 0600
    if proc.returncode != 0 or not partial.is_file():
        last = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        raise ConfigError(
            f"{source}: cannot build the user dictionary: {last}",
            "see docs/configuration.md (Japanese user dictionary) for the CSV format",
        )
    partial.replace(compiled)
    return compiled


_default: JapaneseTokenizer | None = None
_lock = threading.Lock()


def trim_tokenizer() -> None:
    """Leave the process-wide tokenizer's dictionary pages to the page cache (`trim`)."""
    with _lock:
        if _default is not None:
            _default.trim()


def release_tokenizer() -> None:
    """Release the process-wide tokenizer's dictionary until it is next used."""
    with _lock:
        if _default is not None:
            _default.release()


def get_tokenizer(user_dict: Path | None = None) -> JapaneseTokenizer:
    """The process-wide tokenizer (dictionary loading costs ~100 ms, so it is done once)."""
    global _default
    with _lock:
        if _default is None or _default._user_dict != (
            user_dict if user_dict and user_dict.is_file() else None
        ):
            _default = JapaneseTokenizer(user_dict)
        return _default
