"""Where a warm search's time goes, stage by stage, and what of it the query's embedding hides.

bench/search_profile.py's setting (the core on one read connection, the daemon's own query
worker embedding the query, everything warm, bench/daemon_latency.py's vault and queries),
with each stage of the search timed by wrapping its function in this process only: the
wall time a search spends in it (inclusive, so nested stages are also in their parents),
and for the query's embedding, which runs on a pool thread beside the keyword reads, how
long it took and how long the search then waited for it. A stage on the search's critical
path is one after that wait, or one before it when the wait is 0.

Runs unchanged in any checkout since f9192a3: a stage whose function a checkout does not
have is left out, so the same vault can be timed on two commits:

    .venv/bin/python bench/search_stages.py --chunks 10000 --runs 100
    cd /work/wt/base-f919 && .venv/bin/python /work/wt/sqlsearch/bench/search_stages.py \
        --chunks 10000 --runs 100

Also times the contract JSON of each result (render/json_format), which the daemon builds
after `took_ms` stops.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import shutil
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# As the daemon runs (tsm's CLI sets it before anything loads numpy): one OpenBLAS thread.
# search_profile sets it too; said here as well, since nothing may load numpy before.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import search_profile  # noqa: E402

# (label, module, attribute path), in the order the search runs them; indentation in the
# label says which stage a stage runs inside. Names of either checkout: those a checkout
# lacks are skipped.
STAGES = [
    ("search (took_ms)", "tsm.search.engine", "_search"),
    ("  query terms (every call)", "tsm.text.tokenizer", "JapaneseTokenizer.query_terms"),
    ("  filter SQL", "tsm.store.filters", "search_sql"),
    ("  filter SQL", "tsm.store.filters", "filter_sql"),
    ("  read the signals", "tsm.search.engine", "_read_signals"),
    ("    keyword signal", "tsm.search.engine", "_keyword_signal"),
    ("      fts_hits (ranking + count)", "tsm.search.fts", "fts_hits"),
    ("        count: chunk map", "tsm.search.chunkmap", "ChunkDocuments.count_documents"),
    ("      synonyms table", "tsm.search.synonyms", "load_synonyms"),
    ("    entities", "tsm.search.entities", "entity_documents"),
    ("    bridge", "tsm.search.engine", "_bridge_signal"),
    ("      bridge groups", "tsm.search.bridge", "bridge_groups"),
    ("      bridge ranking", "tsm.search.fts", "fts_ranking"),
    ("      bridge passages", "tsm.store.hits", "chunks_by_id"),
    ("    vector signal (with the wait)", "tsm.search.engine", "_vector_signal"),
    ("      load_index (log check)", "tsm.search.vector", "load_index"),
    ("      match (product, top-k, mean)", "tsm.search.vector", "VectorIndex.match"),
    ("        similarities", "tsm.search.vector", "VectorIndex.similarities"),
    ("        best per document", "tsm.search.vector", "VectorIndex.best_per_document"),
    ("      noise level", "tsm.search.relevance", "noise_level"),
    ("  rank", "tsm.search.engine", "_rank"),
    ("    evidence", "tsm.search.engine", "_evidence"),
    ("      coverage read", "tsm.search.coverage", "read_together"),
    ("      keyword evidence", "tsm.search.coverage", "TermCoverage.keyword_evidence"),
    ("    fuse", "tsm.search.results", "fuse_signals"),
    ("  finish (rank + hydrate)", "tsm.search.engine", "_finish"),
    ("    documents_by_id", "tsm.store.hits", "documents_by_id"),
    ("    rank_candidates", "tsm.search.results", "rank_candidates"),
    ("    select_fresh", "tsm.search.hydrate", "select_fresh"),
    ("    select_fresh", "tsm.search.results", "select_fresh"),
    ("    build_hits", "tsm.search.hydrate", "build_hits"),
    ("    build_hits", "tsm.search.results", "build_hits"),
    ("      hit_rows", "tsm.store.hits", "hit_rows"),
    ("      coverage per chunk", "tsm.search.coverage", "TermCoverage.per_chunk"),
    ("      related", "tsm.search.related", "related_documents"),
    ("      snippets", "tsm.search.snippets", "make_snippet"),
    ("      names_note", "tsm.search.relevance", "names_note"),
    ("      distinct_names", "tsm.search.relevance", "distinct_names"),
    ("    first chunk (per entity)", "tsm.store.chunks", "first_chunk"),
]

_MAIN = threading.main_thread().ident
_spent: dict[str, float] = defaultdict(float)
_cpu: dict[str, float] = defaultdict(float)
_calls: dict[str, int] = defaultdict(int)
_marks: dict[str, float] = {}


def _timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != _MAIN:
            return fn(*args, **kwargs)
        started, started_cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _spent[label] += (time.perf_counter() - started) * 1000
            _cpu[label] += (time.thread_time() - started_cpu) * 1000
            _calls[label] += 1

    return wrapper


def _replace_everywhere(original: Any, wrapped: Any) -> None:
    """Rebind a module-level function wherever tsm imported it by name."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("tsm") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, wrapped)


def instrument() -> list[str]:
    labels = []
    for label, module_name, path in STAGES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner: Any = module
        *parents, attr = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent, None)
        original = getattr(owner, attr, None) if owner is not None else None
        if original is None:
            continue
        wrapped = _timed(label, original)
        if parents:
            setattr(owner, attr, wrapped)
        else:
            _replace_everywhere(original, wrapped)
        if label not in labels:
            labels.append(label)
    _instrument_embedding()
    return labels


def _instrument_embedding() -> None:
    """When the query's embedding was submitted and done, and when the search first needed
    it (entering the vector signal)."""
    from tsm.search import engine

    submit = engine._embed_in_background

    def embed_in_background(*args: Any, **kwargs: Any) -> Any:
        _marks["submitted"] = time.perf_counter()
        future = submit(*args, **kwargs)
        future.add_done_callback(lambda _: _marks.__setitem__("done", time.perf_counter()))
        return future

    engine._embed_in_background = embed_in_background
    vector_signal = engine._vector_signal

    def needing(*args: Any, **kwargs: Any) -> Any:
        _marks["needed"] = time.perf_counter()
        return vector_signal(*args, **kwargs)

    engine._vector_signal = needing  # inside the stage wrapper: its time stays counted


def pct(values: list[float], q: float) -> float:
    return search_profile.pct(values, q)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="an indexed vault to time")
    where.add_argument("--chunks", type=int, help="build daemon_latency.py's vault of this size")
    parser.add_argument(
        "--keep",
        type=Path,
        help="with --chunks: build the vault in this new folder and keep it (for --root)",
    )
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--mode", default="hybrid", choices=("hybrid", "fts", "vector"))
    args = parser.parse_args()
    if args.root:
        return run(args.root.resolve(), args)
    if args.keep:
        return run(search_profile.build(args.chunks, args.keep.resolve()), args)
    root = search_profile.build(args.chunks)
    try:
        return run(root, args)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def run(root: Path, args: argparse.Namespace) -> int:
    import tsm
    from tsm.render.json_format import dumps, search_to_dict

    knowledge, embedder = search_profile.open_knowledge(root)
    labels = instrument()
    for text in search_profile.QUERIES * 2:  # warm the wrappers' paths too
        search_profile.search(knowledge, text, args.mode)
    load_start = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    per_stage: dict[str, list[float]] = {label: [] for label in labels}
    per_stage_cpu: dict[str, list[float]] = {label: [] for label in labels}
    calls: dict[str, int] = defaultdict(int)
    took, cpu, json_ms, embed_ms, wait_ms, before_ms, after_ms = [], [], [], [], [], [], []
    for i in range(args.runs):
        text = search_profile.QUERIES[i % len(search_profile.QUERIES)]
        _spent.clear()
        _cpu.clear()
        _calls.clear()
        _marks.clear()
        started_cpu = time.thread_time()
        result = search_profile.search(knowledge, text, args.mode)
        ended = time.perf_counter()
        cpu.append((time.thread_time() - started_cpu) * 1000)
        took.append(float(result.took_ms))
        started = time.perf_counter()
        dumps(search_to_dict(result))
        json_ms.append((time.perf_counter() - started) * 1000)
        for label in labels:
            per_stage[label].append(_spent.get(label, 0.0))
            per_stage_cpu[label].append(_cpu.get(label, 0.0))
            calls[label] += _calls.get(label, 0)
        if {"submitted", "done", "needed"} <= _marks.keys():
            embed_ms.append((_marks["done"] - _marks["submitted"]) * 1000)
            wait_ms.append(max(0.0, _marks["done"] - _marks["needed"]) * 1000)
            before_ms.append((_marks["needed"] - _marks["submitted"]) * 1000)
            after_ms.append((ended - max(_marks["done"], _marks["needed"])) * 1000)
    load_end = " ".join(Path("/proc/loadavg").read_text().split()[:3])

    print(f"tsm {tsm.__file__}")
    print(f"{args.runs} {args.mode} searches, load (1, 5, 15 min) {load_start} → {load_end}\n")
    print(f"took_ms p50 {pct(took, 50):.2f}, mean {statistics.mean(took):.2f}; the searching")
    print(f"thread's CPU p50 {pct(cpu, 50):.2f} ms; contract JSON p50 {pct(json_ms, 50):.2f} ms")
    if embed_ms:
        print(
            f"query embedding (submit → done) p50 {pct(embed_ms, 50):.2f} ms; submit → the "
            f"search needs it p50 {pct(before_ms, 50):.2f} ms; wait p50 {pct(wait_ms, 50):.2f}"
            f" ms, mean {statistics.mean(wait_ms):.2f} ms, 0 in {sum(w == 0 for w in wait_ms)}"
            f" of {len(wait_ms)}"
        )
        print(
            "after the wait (from the embedding's end, or from when the search needed it "
            f"if later, to the search's end) p50 {pct(after_ms, 50):.2f} ms, mean "
            f"{statistics.mean(after_ms):.2f} ms"
        )
    print(
        "\n| stage (inclusive) | calls / search | wall p50 ms | wall mean ms "
        "| the thread's CPU mean ms |"
    )
    print("|---|---:|---:|---:|---:|")
    for label in labels:
        values, spent = per_stage[label], per_stage_cpu[label]
        name = label.strip()
        depth = (len(label) - len(label.lstrip())) // 2
        print(
            f"| {'· ' * depth}{name} | {calls[label] / args.runs:.1f} | "
            f"{pct(values, 50):.2f} | {statistics.mean(values):.2f} | "
            f"{statistics.mean(spent):.2f} |"
        )
    embedder.close()
    knowledge.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
