"""What the notebook features cost per search (issue: ≤ 10 ms at p50 on 100,000 chunks):
date/tag/path filters, the tag/title entity lookup, synonym expansion, the multipliers and
related documents, measured in-process on a generated vault, keyword signal only (the
vector signal is the same with or without them).

    python bench/features_cost.py --notes 35000     # ≈ 100,000 chunks
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import generate  # noqa: E402

from tsm.config import load  # noqa: E402
from tsm.core.knowledge import LocalKnowledge  # noqa: E402
from tsm.search import engine  # noqa: E402
from tsm.search.query import build_query  # noqa: E402

QUERIES = [
    "git install",
    "狩猟 免許",
    "sqlite index latency",
    "無線 通信 距離",
    "battery power",
    "捕獲報告アプリ",
    "design decision meeting",
    "データベース 設計",
    "lora range test",
]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def timed(backend: LocalKnowledge, **flags: object) -> list[float]:
    out = []
    for _ in range(3):
        for q in QUERIES:
            query = build_query(q, today=dt.date(2026, 3, 20), mode="fts", **flags)
            started = time.perf_counter()
            backend.run_query(query)
            out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=35000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsm-bench-features-") as tmp:
        root = Path(tmp)
        generate(root, args.notes)
        (root / ".tsm").mkdir()
        (root / ".tsm" / "synonyms.csv").write_text("git,バージョン管理\nlora,無線\n")
        env = {
            **os.environ,
            "TSM_INDEX_ROOT": str(root),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_EMBEDDER": "none",
        }
        backend = LocalKnowledge(load(root, env))
        report = backend.index(embed=False)
        # Each feature's stage, timed where the engine calls it; one list entry per search.
        stages = {
            "entity lookup (tags, titles, aliases)": "entity_documents",
            "synonym expansion": "expand",
            "multipliers (recency, status, folder weight)": "rank_candidates",
            "hits: snippets, related documents, tags": "build_hits",
            "temporal expressions and filters (query parsing)": "build_query",
        }
        spent: dict[str, list[float]] = {label: [] for label in stages}
        for label, name in stages.items():
            module = engine if hasattr(engine, name) else sys.modules[__name__]
            setattr(module, name, _timed(getattr(module, name), spent[label]))
        plain = timed(backend)
        for values in spent.values():
            values.clear()
        filtered = timed(backend, after="2025-01", tags=["git"], paths=["notes/01"])
        per_search = [sum(v) for v in zip(*spent.values(), strict=True)]
        print(
            f"| {report.chunks:,} chunks ({args.notes:,} notes), {os.cpu_count()} cores, "
            f"load {os.getloadavg()[0]:.1f} | p50 ms |"
        )
        print("|---|---:|")
        print(f"| whole keyword search, no filters | {p50(plain):.1f} |")
        print(f"| whole keyword search, date + tag + path filters | {p50(filtered):.1f} |")
        for label, values in spent.items():
            print(f"| of which {label} | {p50(values):.2f} |")
        print(f"| **the features together, per search (filtered)** | {p50(per_search):.1f} |")
        count_by_map, count_by_join = total_matches_cost(backend)
        print(
            f"| `total_matches` of an unfiltered search: rowids + chunk map / SQL join | "
            f"{count_by_map:.1f} / {count_by_join:.1f} |"
        )


def total_matches_cost(backend: LocalKnowledge) -> tuple[float, float]:
    """p50 ms of counting the documents behind each query's keyword matches, both ways."""
    from tsm.search.chunkmap import chunk_documents
    from tsm.search.fts import match_expression
    from tsm.text.tokenizer import get_tokenizer

    conn, key = backend.conn(), str(backend.settings.db_path)
    chunk_documents(conn, key)  # loaded once per process, as in the daemon
    by_map, by_join = [], []
    for q in QUERIES:
        expression = match_expression(get_tokenizer().query_terms(q))
        started = time.perf_counter()
        mapped = chunk_documents(conn, key).count_documents(
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)
            )
        )
        by_map.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        joined = conn.execute(
            """SELECT COUNT(DISTINCT c.document_id) FROM chunks_fts f
               JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?""",
            (expression,),
        ).fetchone()[0]
        by_join.append((time.perf_counter() - started) * 1000)
        assert mapped == joined, (q, mapped, joined)
    return p50(by_map), p50(by_join)


def _timed(fn, into: list[float]):  # type: ignore[no-untyped-def]
    def wrapper(*a, **k):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            into.append((time.perf_counter() - started) * 1000)

    return wrapper


if __name__ == "__main__":
    main()
