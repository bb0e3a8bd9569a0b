#!/usr/bin/env python3
"""Check that this checkout's tokenizer gives the same FTS terms as another revision's, and
time the two side by side: every document and query of the Japanese retrieval sets through
`index_text` and `query_terms`, in one process, A and B alternated.

    python bench/tokenizer_identity.py [--rev 02ef1b4] [--sets jaquad jaquad-para scifact-ja]

Identical terms mean identical keyword retrieval, so the retrieval figures need no new run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "datasets"
sys.path.insert(0, str(HERE.parent / "src"))


def tokenizer_at(rev: str):
    """The tokenizer module as it was at `rev`, loaded beside this checkout's."""
    source = subprocess.run(
        ["git", "-C", str(HERE.parent), "show", f"{rev}:src/tsm/text/tokenizer.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    folder = Path(tempfile.mkdtemp()) / "tsm" / "text"
    folder.mkdir(parents=True)
    (folder / "tokenizer_at_rev.py").write_text(source)
    spec = importlib.util.spec_from_file_location(
        "tsm.text.tokenizer_at_rev", folder / "tokenizer_at_rev.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def texts(name: str) -> tuple[list[str], list[str]]:
    folder = DATA / name
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh if line.strip()]
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh if line.strip()]
    return [d["title"] + "\n" + d["text"] for d in docs], queries


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rev", default="02ef1b4")
    parser.add_argument("--sets", nargs="+", default=["jaquad", "jaquad-para", "scifact-ja"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tsm.text import tokenizer as current

    before = tokenizer_at(args.rev).JapaneseTokenizer()
    after = current.JapaneseTokenizer()
    for name in args.sets:
        docs, queries = texts(name)
        same_docs = all(before.index_text(t) == after.index_text(t) for t in docs)
        same_queries = all(before.query_terms(q) == after.query_terms(q) for q in queries)
        cpu = {"before": [], "after": []}
        for _ in range(args.rounds):
            for label, tok in (("before", before), ("after", after)):
                started = time.process_time()
                for text in docs:
                    tok.index_text(text)
                cpu[label].append(time.process_time() - started)
        b, a = min(cpu["before"]), min(cpu["after"])
        print(
            f"{name}: {len(docs)} documents identical={same_docs}, {len(queries)} queries "
            f"identical={same_queries}; index_text CPU (best of {args.rounds}) "
            f"{args.rev} {b:.2f} s, this checkout {a:.2f} s ({a / b:.2f}x)"
        )


if __name__ == "__main__":
    main()
