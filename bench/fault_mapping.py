"""How much of a read-only file mapping one touched page brings into a process's RSS, by how
the file sits in the page cache and by the advice given to the mapping (issue 32 item 5: a
freshly installed venv's daemon and query worker held 90-130 MB more than a long-lived one's).

A file is written the way pip installs one (buffered writes of 64 KiB), then mapped, advised
and read one byte at `--touches` offsets spread over it; the mapping's Rss comes from
/proc/self/smaps. "just written": the pages pip's writes left in the page cache. "read back":
the same file after `posix_fadvise(DONTNEED)` evicted it, so the touches read it from disk.
Each row maps the file afresh; "after DONTNEED + same touches" shows what unmapping the
pages and touching the same bytes again costs and leaves.

    .venv/bin/python bench/fault_mapping.py --size-mb 64 --touches 64
    .venv/bin/python bench/fault_mapping.py --file VENV/.../system.dic  # a file as it sits
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tsm.pagecache import advise, resident_kb  # noqa: E402

ADVICE = {
    "none": None,
    "MADV_RANDOM": mmap.MADV_RANDOM,
    "MADV_SEQUENTIAL": mmap.MADV_SEQUENTIAL,
    "MADV_NOHUGEPAGE": getattr(mmap, "MADV_NOHUGEPAGE", 15),
}
WRITE_SIZE = 64 * 1024  # shutil.copyfileobj's buffer on Linux, which pip installs through


def write_like_pip(path: Path, size: int) -> None:
    block = os.urandom(WRITE_SIZE)
    with open(path, "wb") as fh:
        for _ in range(size // WRITE_SIZE):
            fh.write(block)
        fh.flush()
        os.fsync(fh.fileno())  # clean pages, so DONTNEED below can evict them


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def measure(path: Path, advice: int | None, touches: int) -> tuple[float, float, float]:
    """(KiB mapped per touch, the same after unmapping and touching again, µs per re-touch)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        if advice is not None:
            mapping.madvise(advice)
        offsets = [(i * size // touches) + 4096 * 3 for i in range(touches)]
        total = 0
        for offset in offsets:
            total += mapping[offset]
        first = resident_kb(path)
        advise(path, mmap.MADV_DONTNEED)
        started = time.perf_counter()
        for offset in offsets:
            total += mapping[offset]
        again_us = (time.perf_counter() - started) * 1e6 / touches
        again = resident_kb(path)
        del total
        return first / touches, again / touches, again_us
    finally:
        mapping.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64)
    parser.add_argument("--touches", type=int, default=64)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--file", type=Path, action="append", help="map these files as they sit")
    args = parser.parse_args()
    print(f"kernel {os.uname().release}, load {os.getloadavg()[0]:.2f}, {args.touches} touches")
    if args.file:
        print("\n| file | advice | KiB mapped per touched page |\n|---|---|---:|")
        for path in args.file:
            for name in ("none", "MADV_RANDOM"):
                per_touch, _, _ = measure(path, ADVICE[name], args.touches)
                print(f"| {path} | {name} | {per_touch:.0f} |")
        return 0
    print(
        "\n| page cache | advice | KiB mapped per touched page | after DONTNEED + same "
        "touches | µs per touch again |\n|---|---|---:|---:|---:|"
    )
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="faultmap") as tmp:
        path = Path(tmp) / "file.bin"
        for state in ("just written", "read back"):
            for name, advice in ADVICE.items():
                path.unlink(missing_ok=True)
                write_like_pip(path, args.size_mb << 20)
                if state == "read back":
                    evict(path)
                per_touch, again, again_us = measure(path, advice, args.touches)
                print(f"| {state} | {name} | {per_touch:.0f} | {again:.0f} | {again_us:.1f} |")
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
