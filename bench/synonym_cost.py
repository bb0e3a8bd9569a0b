"""Approximate cost of the near-synonym stage of a search (bridge.synonym_groups, one FTS5
query over the groups, their document frequencies and the coverage of the top three), per
query, in-process on a keyword-only index of one dataset's corpus:

    python bench/synonym_cost.py jaquad jaquad-para jaquad    # corpus, then query sets
    python bench/synonym_cost.py scifact scifact-ja

Each query set gives its first 100 queries; a 200-word Japanese prompt is added. Every query
runs once to warm the caches, then three times timed.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import retrieval  # noqa: E402

from tsm.config import load  # noqa: E402
from tsm.core.knowledge import LocalKnowledge  # noqa: E402
from tsm.indexing import index_paths  # noqa: E402
from tsm.search.bridge import bridge_expression, bridge_groups, synonym_groups  # noqa: E402
from tsm.search.coverage import TermCoverage  # noqa: E402
from tsm.search.fts import fts_hits  # noqa: E402
from tsm.search.lexicon import load_lexicon  # noqa: E402
from tsm.text.tokenizer import get_tokenizer  # noqa: E402


def main() -> None:
    corpus_name, query_sets = sys.argv[1], sys.argv[2:]
    corpus, _, _ = retrieval.load_dataset(corpus_name, None, None)
    root = Path(tempfile.mkdtemp(prefix="tsm-synonym-cost-"))
    (root / "docs").mkdir()
    retrieval.write_corpus(corpus, root / "docs")
    env = {"TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1", "TSM_EMBEDDER": "none"}
    settings = load(root, env)
    conn = LocalKnowledge(settings).conn(create=True)
    index_paths(settings, conn, [], embedder=None)
    tokenizer, lexicon = get_tokenizer(), load_lexicon()
    assert lexicon is not None, "jamdict-data is a dependency"
    texts = [q["text"] for name in query_sets for q in retrieval.load_dataset(name, None, 100)[1]]
    texts.append("カリブ出身の歌い手が選考会に出た話 " * 20)

    def stage(text: str) -> float:
        groups = bridge_groups(text, tokenizer, lexicon)
        started = time.perf_counter()
        synonyms = synonym_groups(groups, tokenizer, lexicon)
        expression = bridge_expression(synonyms)
        if expression:
            ranked, _ = fts_hits(conn, expression, "1", [], 100)
            cover = TermCoverage(
                conn, [g.source for g in synonyms], {g.source: g.expression for g in synonyms}
            )
            cover.best([c for c, _, _ in ranked[:3]])
        return (time.perf_counter() - started) * 1000

    for text in texts:
        stage(text)
    ms = sorted(stage(text) for _ in range(3) for text in texts)
    print(
        f"{corpus_name} ({len(corpus)} docs), {len(texts)} queries x 3: "
        f"p50 {statistics.median(ms):.1f} ms, p95 {ms[int(0.95 * len(ms))]:.1f} ms, "
        f"max {ms[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
