"""Statements one search issues, counted with SQLite's trace callback through
LocalKnowledge.search on a copy of examples/vault indexed with the real default model, for
each query at -k 5 and -k 50 (tests/search/test_statement_count.py holds the bound).

    python bench/statements_per_search.py [--queries "install git" ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUERIES = [
    "install git",
    "what did I write about LoRa last month",
    "how do I set up a router",
    "sqlite index decision",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", nargs="+", default=QUERIES)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        shutil.copytree(REPO / "examples" / "vault", root)
        env = {
            **os.environ,
            "TSM_INDEX_ROOT": str(root),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_AUTOSTART": "0",
            "TSM_NOW": "2026-03-15T12:00:00",
        }
        subprocess.run(
            [sys.executable, "-m", "tsm", "index", "-f", "json"],
            env=env,
            check=True,
            capture_output=True,
        )
        os.environ.update(env)
        from tsm import config
        from tsm.core.knowledge import LocalKnowledge
        from tsm.core.request import SearchRequest, clock

        knowledge = LocalKnowledge(config.load(root))
        knowledge.search(SearchRequest("warm up", now=clock()))
        conn = knowledge.conn()
        print("| query | -k | statements | hits | by first word |")
        print("|---|---|---|---|---|")
        for text in args.queries:
            for k in (5, 50):
                sent: list[str] = []

                def trace(sql: str, sent: list[str] = sent) -> None:
                    if not sql.startswith("--"):  # a trigger's statement
                        sent.append(sql)

                conn.set_trace_callback(trace)  # type: ignore[union-attr]
                result = knowledge.search(SearchRequest(text, top_k=k, now=clock()))
                conn.set_trace_callback(None)  # type: ignore[union-attr]
                kinds = Counter(" ".join(s.split()[:2]) for s in sent)
                print(
                    f"| {text} | {k} | {len(sent)} | {len(result.results)} | "
                    f"{', '.join(f'{k} ×{n}' for k, n in kinds.most_common(4))} |"
                )
        knowledge.close()


if __name__ == "__main__":
    main()
