#!/usr/bin/env python3
"""The CPU of a keyword-only index run, phase by phase, in one process: every note of a set
(laid out as bench/index_vs_qmd.py lays them) goes through the same functions `tsm index`
calls, one phase at a time over all notes, each timed with `time.process_time()` (CPU, which
the machine's load disturbs far less than wall time). No profiler hooks any call.

    python bench/index_phases.py --set jaquad [--repeat 3]

Phases: the dictionary's first load; reading and hashing each file; the Markdown reader;
chunking; inside the tokenizer, NFKC and case folding, finding the Japanese runs, SudachiPy's
own `tokenize` (timed alone over the same runs) and tsm's per-morpheme Python (the analyzer's
`terms` less that); the rest of `prepare` (hashes, rows); pickling a worker's result and
reading it back; the writer's SQLite statements (re-read and hash, look-ups, inserts, FTS5,
commits) and the final segment merge. Also how often the same Japanese run comes back (what
a cache of runs would spare). Start-up is measured apart: `tsm index` of an empty folder.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_vs_qmd import layout, load  # noqa: E402


def startup_cpu(folder: Path, scratch: Path, runs: int = 3) -> list[float]:
    """CPU of `tsm index --no-embed` with nothing to index (interpreter, imports, exit)."""
    tsm = Path(sys.executable).parent / "tsm"
    empty = scratch / "empty"
    empty.mkdir(exist_ok=True)
    cpus = []
    for _ in range(runs + 1):  # the first compiles the modules (kept, as an installed tsm)
        shutil.rmtree(scratch / "empty-state", ignore_errors=True)
        env = {
            **os.environ,
            "TSM_INDEX_ROOT": str(empty),
            "TSM_STATE_DIR": str(scratch / "empty-state"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [str(tsm), "index", "--no-embed", "-f", "json"],
            cwd=empty,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return cpus[1:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="jaquad")
    parser.add_argument("--repeat", type=int, default=3, help="passes per phase (min is shown)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="index-phases-"))
    try:
        run(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(args: argparse.Namespace, scratch: Path) -> None:
    folder = scratch / args.set
    notes = layout(args.set, folder)
    print(f"## {args.set}: {notes} notes, load {load()}", flush=True)
    start = startup_cpu(folder, scratch)
    os.environ["TSM_INDEX_ROOT"] = str(folder)
    os.environ["TSM_STATE_DIR"] = str(scratch / "state")

    from tsm import config, indexing
    from tsm.sources import load_bytes, reader_for
    from tsm.sources.files import Reach
    from tsm.store import documents, keywords
    from tsm.store.connect import grouped, open_db
    from tsm.text import tokenizer as tok
    from tsm.text.chunk import chunk_sections
    from tsm.workspace import IgnoreRules

    settings = config.load(folder)
    reach = Reach.of(settings.index_root, [], IgnoreRules(settings.index_root))
    files = sorted(folder.glob("*.md"))
    rels = [f.name for f in files]
    limit = 10 * 1024 * 1024
    phases: dict[str, float] = {}

    def timed(name: str, work, repeat: int = args.repeat):
        best, result = float("inf"), None
        for _ in range(repeat):
            t = time.process_time()
            result = work()
            best = min(best, time.process_time() - t)
        phases[name] = best
        return result

    t = time.process_time()
    tokenizer = tok.get_tokenizer(None)
    tokenizer.index_text("日本語")
    phases["dictionary: first load (per process)"] = time.process_time() - t

    datas = timed(
        "read and hash (per read)",
        lambda: [(d := load_bytes(f, limit, reach), hashlib.sha256(d).hexdigest()) for f in files],
    )
    t = time.process_time()
    reader_for(files[0])(files[0], rels[0], datas[0][0])
    phases["reader: first call (lazy imports)"] = time.process_time() - t
    docs = timed(
        "Markdown reader",
        lambda: [reader_for(f)(f, r, d) for f, r, (d, _) in zip(files, rels, datas, strict=True)],
    )
    max_chars = settings.get("chunking.max_chars")
    timed("chunking", lambda: [chunk_sections(d.sections, max_chars) for d in docs])

    # The texts prepare() hands the tokenizer, recorded by running it once.
    texts: list[str] = []
    real = tok.JapaneseTokenizer.index_text

    def recording(self, text):
        texts.append(text)
        return real(self, text)

    tok.JapaneseTokenizer.index_text = recording
    prepared = [indexing.prepare(settings, d) for d in docs]
    tok.JapaneseTokenizer.index_text = real
    timed(
        "prepare: whole (chunk, tokenize, rows)",
        lambda: [indexing.prepare(settings, d) for d in docs],
    )
    timed("tokenizer: index_text, whole", lambda: [tokenizer.index_text(x) for x in texts])
    normalized = timed("tokenizer: NFKC + lower", lambda: [tok.normalize(x) for x in texts])
    runs = timed(
        "tokenizer: find Japanese runs",
        lambda: [m.group() for x in normalized for m in tok._JA_RUN.finditer(x)],
    )
    with tokenizer._analyzer() as analyzer:
        timed(
            "tokenizer: analyzer.terms (Sudachi + per-morpheme)",
            lambda: [analyzer.terms(r) for r in runs],
        )
        tokenize, out = analyzer.tokenizer.tokenize, analyzer.out

        def sudachi_only(some):
            for r in some:
                for s in range(0, len(r), tok._MAX_RUN):
                    tokenize(r[s : s + tok._MAX_RUN], out=out)

        timed("tokenizer: SudachiPy tokenize() alone", lambda: sudachi_only(runs))
        distinct = list(dict.fromkeys(runs))
        timed(
            "tokenizer: analyzer.terms, distinct runs only",
            lambda: [analyzer.terms(r) for r in distinct],
        )
        morphemes = surfaces = 0
        forms: Counter[str] = Counter()
        for r in runs:
            for m in tokenize(r, out=out):
                morphemes += 1
                forms[m.surface()] += 1
    terms = phases["tokenizer: analyzer.terms (Sudachi + per-morpheme)"]
    alone = phases["tokenizer: SudachiPy tokenize() alone"]
    phases["tokenizer: per-morpheme Python (terms less tokenize)"] = terms - alone
    surfaces = len(forms)

    sent = [
        indexing.Parsed(h, replace(d, sections=()), p)
        for (_, h), d, p in zip(datas, docs, prepared, strict=True)
    ]
    blobs = timed(
        "pickle: dumps (worker)", lambda: [pickle.dumps(s, pickle.HIGHEST_PROTOCOL) for s in sent]
    )
    timed("pickle: loads (writer)", lambda: [pickle.loads(b) for b in blobs])

    def store() -> None:
        shutil.rmtree(scratch / "db", ignore_errors=True)
        conn = open_db(scratch / "db" / "tsm.db", create=True)
        st = {"sql": 0.0, "reread": 0.0}
        with grouped(conn):
            for f, r, (_, h), d, p in zip(files, rels, datas, docs, prepared, strict=True):
                info = f.stat()

                def one(f=f, r=r, h=h, d=d, p=p, info=info) -> None:
                    t0 = time.process_time()
                    documents.stored_and_twins(conn, r, h)
                    t1 = time.process_time()
                    hashlib.sha256(load_bytes(f, limit, reach)).hexdigest()
                    t2 = time.process_time()
                    indexing._store_over_twins(settings, conn, (d, p, h), [], lambda _: False, info)
                    st["sql"] += (t1 - t0) + (time.process_time() - t2)
                    st["reread"] += t2 - t1

                indexing._locked(conn, [r], one)
        t = time.process_time()
        keywords.settle(conn)
        st["settle"] = time.process_time() - t
        conn.close()
        store.figures = st  # type: ignore[attr-defined]

    timed("store: whole (grouped, as the writer)", store, repeat=1)
    st = store.figures  # type: ignore[attr-defined]
    phases["store: re-read and hash under the lock"] = st["reread"]
    phases["store: final segment merge (settle)"] = st["settle"]

    cpus = ", ".join(f"{c:.3f}" for c in start)
    print(f"\nstart-up, `tsm index` of an empty folder: CPU {cpus} s")
    print(
        f"texts tokenized {len(texts)}, Japanese runs {len(runs)} ({len(distinct)} distinct, "
        f"{sum(map(len, runs))} chars, {sum(map(len, distinct))} in distinct runs); "
        f"morphemes {morphemes} ({surfaces} distinct surfaces)\n"
    )
    print("| phase | CPU s |\n|---|---:|")
    for name, value in phases.items():
        print(f"| {name} | {value:.3f} |")
    print(f"\nload after {load()}")


if __name__ == "__main__":
    main()
