"""Where exact (brute-force) cosine search stops being fast enough: time one query against
N × 384 float32 rows (the default model's dimension) with the same code path as search,
`VectorIndex.nearest`, for growing N.

    python bench/vector_scaling.py --sizes 10000,100000,300000,1000000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI and daemon set it

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tsm.search.vector import VectorIndex  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,300000,1000000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"| rows × {args.dim} | matrix MB | p50 ms | p95 ms | with a filter mask, p50 ms |")
    print("|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        matrix = rng.standard_normal((size, args.dim), dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        ids = np.arange(size, dtype=np.int64)
        index = VectorIndex(ids, ids // 3, matrix, 0, size)
        allowed = ids[: size // 2]
        plain, masked = [], []
        for _ in range(args.runs):
            query = matrix[rng.integers(size)]
            started = time.perf_counter()
            index.nearest(query, 300)
            plain.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            index.nearest(query, 300, allowed)
            masked.append((time.perf_counter() - started) * 1000)
        plain.sort()
        print(
            f"| {size:,} | {matrix.nbytes / 1e6:.0f} | {statistics.median(plain):.1f} | "
            f"{plain[int(0.95 * (len(plain) - 1))]:.1f} | {statistics.median(masked):.1f} |"
        )


if __name__ == "__main__":
    main()
