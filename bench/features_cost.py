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

from tsm.backend import LocalBackend  # noqa: E402
from tsm.config import load  # noqa: E402
from tsm.search import engine, entities, results  # noqa: E402
from tsm.search.query import build_query  # noqa: E402

QUERIES = ["git install", "狩猟 免許", "sqlite index latency", "無線 通信 距離", "battery power",
           "捕獲報告アプリ", "design decision meeting", "データベース 設計", "lora range test"]


def p50(values: list[float]) -> float:
    return statistics.median(values)


def timed(backend: LocalBackend, **flags: object) -> list[float]:
    out = []
    for _ in range(3):
        for q in QUERIES:
            query = build_query(q, today=dt.date(2026, 3, 20), mode="fts", **flags)
            started = time.perf_counter()
            backend.search(query)
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
        env = {**os.environ, "TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1",
               "TSM_EMBEDDER": "none"}
        backend = LocalBackend(load(root, env))
        report = backend.index(embed=False)
        stage: dict[str, list[float]] = {"entities": [], "related+hits": []}
        original_entities = entities.entity_documents
        original_build = results.build_hits

        def timed_entities(*a, **k):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return original_entities(*a, **k)
            finally:
                stage["entities"].append((time.perf_counter() - started) * 1000)

        def timed_build(*a, **k):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return original_build(*a, **k)
            finally:
                stage["related+hits"].append((time.perf_counter() - started) * 1000)

        engine.entity_documents = timed_entities  # type: ignore[assignment]
        engine.build_hits = timed_build  # type: ignore[assignment]
        plain = timed(backend)
        filtered = timed(backend, after="2025-01", tags=["git"], paths=["notes/01"])
        print(f"| {report.chunks:,} chunks ({args.notes:,} notes), {os.cpu_count()} cores, "
              f"load {os.getloadavg()[0]:.1f} | p50 ms |")
        print("|---|---:|")
        print(f"| whole keyword search, no filters | {p50(plain):.1f} |")
        print(f"| whole keyword search, date + tag + path filters | {p50(filtered):.1f} |")
        print(f"| of which entity lookup (tags, titles, aliases) | {p50(stage['entities']):.1f} |")
        print(f"| of which building hits (multipliers, snippets, related, tags) | "
              f"{p50(stage['related+hits']):.1f} |")


if __name__ == "__main__":
    main()
