"""What the daemon keeps resident: after it indexes Japanese text, only the pages of the
tokenizer's dictionary that its searches read again (text/tokenizer.py, pagecache.py)."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_harness import Harness  # noqa: E402
from patience import scaled  # noqa: E402

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="resident pages are read from /proc"
)


def dictionary_resident_mb(pid: int) -> float:
    from tsm.pagecache import resident_kb
    from tsm.text.tokenizer import system_dictionary

    return resident_kb(system_dictionary(), pid) / 1024


def test_after_indexing_japanese_the_daemon_keeps_little_of_the_dictionary() -> None:
    """Indexing varied Japanese text reads pages all over the 192 MB dictionary (over 80 MB
    for this note); they stayed mapped in the daemon for its lifetime. Now its writer leaves
    them to the page cache after each job that tokenized documents."""
    h = Harness(environ={**os.environ, "TSM_EMBEDDER": "none"})
    try:
        h.start("--no-watch")
        rng = random.Random(3)
        letters = [chr(c) for c in range(0x3041, 0x3097)] + [chr(c) for c in range(0x4E00, 0x9FA0)]
        lines = ["".join(rng.choice(letters) for _ in range(100)) for _ in range(200)]
        note = h.root / "notes" / "random-japanese.md"
        note.write_text("# 雑記\n\n" + "\n\n".join(lines) + "\n", encoding="utf-8")
        result = h.cli("index", "-f", "json", "--", str(note))
        assert result.code == 0, result.err
        assert result.json()["chunks"] > 0
        pid = h.pid()
        assert pid is not None
        assert dictionary_resident_mb(pid) < 40
    finally:
        h.close()


def test_once_searches_pause_the_daemon_keeps_none_of_the_dictionary() -> None:
    """Each search reads scattered pages of the dictionary, and each page brought the whole
    page-cache folio around it into the daemon for good: 86 MB after 30 searches in a venv
    pip 26 had just installed (1 MiB folios), 19 MB in an older one. Now they go back to the
    page cache once searches pause (daemon/services.py, SEARCH_PAUSE_SECONDS)."""
    h = Harness(environ={**os.environ, "TSM_EMBEDDER": "none"})
    try:
        h.start("--no-watch")
        queries = ("狩猟免許の更新", "先月の会議で決めた予算", "東京都の人口", "量子計算機の仕組み")
        for query in queries + ("機械学習モデルの評価方法", "富士山の高さと天気"):
            result = h.cli("search", query, "-f", "json", "--fts-only")
            assert result.code == 0, result.err
        pid = h.pid()
        assert pid is not None
        deadline = time.monotonic() + scaled(15)
        while (held := dictionary_resident_mb(pid)) > 0.5 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert held <= 0.5, f"{held:.1f} MB of the dictionary still mapped"
    finally:
        h.close()
