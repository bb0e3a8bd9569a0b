"""What `--lang ja|en` costs and whether its test of a passage's language is the right one.

The index keeps no language per chunk, so the store's filter tests the stored text: a passage
is Japanese when it holds kana (store/filters.py). This bench indexes Japanese paragraphs
(JaQuAD) and English abstracts (SciFact) from ../shared/datasets as notes, keywords only
(--no-embed), then reports:

- agreement of the kana test with the language the bilingual bridge gives each chunk
  (search/bridge.text_language, a share of Japanese letters), chunk by chunk;
- the filter's cost: the vector side's allow-list (every chunk the filter lets through,
  store.filters.chunk_ids) with no filter, --lang ja and --lang en, and a keyword search
  (took_ms) with and without --lang, alternated round by round.

    .venv/bin/python bench/lang_filter.py --docs 1400 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATASETS = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets"
KANA = re.compile(r"[ぁ-ヿ]")


def write_notes(root: Path, name: str, limit: int) -> int:
    folder = root / name
    folder.mkdir(parents=True)
    count = 0
    with open(DATASETS / name / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title = doc.get("title") or doc["_id"]
            (folder / f"{count:05d}.md").write_text(f"# {title}\n\n{doc['text']}\n")
            count += 1
            if count >= limit:
                break
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1400, help="notes per language")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from tsm.config import load
    from tsm.core.knowledge import LocalKnowledge
    from tsm.core.request import SearchRequest
    from tsm.search.bridge import text_language
    from tsm.search.query import Filters
    from tsm.store.filters import chunk_ids, filter_sql

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        ja = write_notes(root, "jaquad", args.docs)
        en = write_notes(root, "scifact", args.docs)
        env = {**os.environ, "TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1"}
        env["TSM_AUTOSTART"] = "0"
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tsm", "index", "--no-embed", "-f", "json"],
            env=env,
            check=True,
            capture_output=True,
        )
        took_s = time.perf_counter() - started
        print(f"indexed {ja} Japanese + {en} English notes in {took_s:.0f} s")
        os.environ.update(env)
        knowledge = LocalKnowledge(load())
        conn = knowledge.conn()

        rows = conn.execute("SELECT text FROM chunks").fetchall()
        agree = sum((text_language(text) == "ja") == bool(KANA.search(text)) for (text,) in rows)
        kana = sum(bool(KANA.search(text)) for (text,) in rows)
        print(f"chunks {len(rows)}: kana test says ja for {kana}; agrees with the bridge's")
        print(f"text_language on {agree} of {len(rows)}")

        allow: dict[str, list[float]] = {"none": [], "ja": [], "en": []}
        took: dict[str, list[float]] = {"none": [], "ja": []}
        for _ in range(args.rounds):
            for lang in allow:
                where, params = filter_sql(Filters(lang=None if lang == "none" else lang))
                started = time.perf_counter()
                count = sum(1 for _ in chunk_ids(conn, where, params))
                allow[lang].append((time.perf_counter() - started) * 1000)
            for lang in took:
                request = SearchRequest(
                    "protein 研究", mode="fts", lang=None if lang == "none" else lang
                )
                took[lang].append(knowledge.search(request).took_ms)
        print(f"last allow-list sizes: ja+en {len(rows)}, en {count}")
        for lang, times in allow.items():
            print(f"allow-list, filter {lang:4}: median {statistics.median(times):7.1f} ms")
        for lang, times in took.items():
            print(f"fts search, --lang {lang:4}: median took_ms {statistics.median(times):7.1f}")
        knowledge.close()


if __name__ == "__main__":
    main()
