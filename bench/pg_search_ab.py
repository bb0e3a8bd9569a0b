"""Two versions of tsm's search, alternated query by query in one process on the same index:
on a shared, loaded machine, runs minutes apart differ by more than most changes do, while
two searches a few milliseconds apart see the same load.

Each version is a source tree (a checkout's `src`, or a copy of it) imported under its own
module objects, with a LocalKnowledge of its own (its own connection and caches) over the
index that the environment's settings name. Per version: the engine's took_ms (p50, mean),
the CPU time the searches cost this process and (PostgreSQL on this machine) the server
process that answered them, and the statements sent.

    python bench/pg_search_ab.py ../base-pgperf/src src --store-url URL --root CORPUS
    python bench/pg_search_ab.py ../base-pgperf/src src --root CORPUS --state STATE  # SQLite
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI, hence `tsm mcp`, sets it
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from pg_search_profile import (  # noqa: E402
    Recorder,
    adopt_workspace,
    backend_cpu,
    backend_pid,
    environment,
    instrument_postgres,
    settings_env,
)
from pg_team_server import build_corpus, load_queries  # noqa: E402

MODULES = ("tsm.config", "tsm.core.knowledge", "tsm.core.request")


def _ours(name: str) -> bool:
    return name == "tsm" or name.startswith("tsm.")


class Tree:
    """A source tree's tsm, imported under module objects of its own. A search imports more
    of it as it goes (relative imports inside functions look in sys.modules): `active`
    puts this tree's modules there for the while, and keeps those imported meanwhile."""

    def __init__(self, src: Path) -> None:
        self.src = str(src.resolve())
        self.own: dict[str, ModuleType] = {}
        with self.active():
            self.modules = {name: importlib.import_module(name) for name in MODULES}

    @contextmanager
    def active(self) -> Iterator[None]:
        for name in [n for n in sys.modules if _ours(n)]:
            del sys.modules[name]
        sys.modules.update(self.own)
        sys.path.insert(0, self.src)
        try:
            yield
        finally:
            sys.path.remove(self.src)
            self.own = {n: m for n, m in sys.modules.items() if _ours(n)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs=2, type=Path, help="two source trees (src dirs)")
    parser.add_argument("--store-url", help="a PostgreSQL store (default: SQLite in --state)")
    parser.add_argument("--root", type=Path, help="the corpus (default: built in a temp dir)")
    parser.add_argument("--state", type=Path, help="the state dir of an SQLite index of --root")
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=400, help="searches per version")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--out", type=Path, help="the summary as JSON")
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tsm-search-ab-") as tmp:
        root = args.root or Path(tmp) / "corpus"
        if args.root is None:
            print("corpus:", build_corpus(root, args.chunks, 1000), flush=True)
        state = args.state or Path(tmp) / "state"
        if args.store_url:
            adopt_workspace(args.store_url, state)
        env = settings_env(argparse.Namespace(store_url=args.store_url), root, state)
        with environment(env):
            sides = [Side(tree, root) for tree in args.trees]
            queries = load_queries(args.queries)
            for query in queries[: args.warmup]:
                for side in sides:
                    side.search(query, timed=False)
            load = os.getloadavg()
            for side in sides:
                side.start()
            for n, query in enumerate(queries):
                for side in sides if n % 2 == 0 else sides[::-1]:
                    side.search(query)
            for side in sides:
                side.stop()
            summary = {
                "load": [round(x, 2) for x in load],
                "load_after": [round(x, 2) for x in os.getloadavg()],
                "queries": len(queries),
                "same_results": sides[0].results == sides[1].results,
                "sides": [side.summary() for side in sides],
            }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))


class Side:
    """One version: its modules, its LocalKnowledge, what its searches cost."""

    def __init__(self, tree: Path, root: Path) -> None:
        self.tree = Tree(tree)
        self.modules = self.tree.modules
        with self.tree.active():
            settings = self.modules["tsm.config"].load(root)
            self.knowledge = self.modules["tsm.core.knowledge"].LocalKnowledge(settings)
            self.conn = self.knowledge.conn()
        self.recorder = Recorder()
        self.pid: int | None = None
        if getattr(self.conn, "raw", None) is not None:
            instrument_postgres(self.conn, self.recorder)
            self.pid = backend_pid(self.conn)
        self.took: list[float] = []
        self.statements: list[int] = []
        self.results: list[list[int]] = []
        self.cpu = 0.0
        self.server = 0.0

    def search(self, query: str, timed: bool = True) -> None:
        request = self.modules["tsm.core.request"]
        self.recorder.sent = []
        self.recorder.on = timed
        with self.tree.active():
            began = time.process_time()
            server = backend_cpu(self.pid)
            result = self.knowledge.search(request.SearchRequest(query, now=request.clock()))
            if timed:
                self.cpu += time.process_time() - began
                self.server += backend_cpu(self.pid) - server
        if timed:
            self.took.append(result.took_ms)
            self.statements.append(len(self.recorder.sent))
            self.results.append([hit.chunk_id for hit in result.results])
        self.recorder.on = False

    def start(self) -> None:
        self.took, self.statements, self.results, self.cpu, self.server = [], [], [], 0.0, 0.0

    def stop(self) -> None:
        self.knowledge.close()

    def summary(self) -> dict[str, Any]:
        n = max(len(self.took), 1)
        return {
            "tree": self.tree.src,
            "took_p50_ms": round(statistics.median(self.took), 2),
            "took_mean_ms": round(statistics.fmean(self.took), 2),
            "client_cpu_ms": round(self.cpu * 1000 / n, 2),
            "server_cpu_ms": round(self.server * 1000 / n, 2) if self.pid else None,
            "statements_mean": round(statistics.fmean(self.statements), 2) if self.pid else None,
        }


if __name__ == "__main__":
    main()
