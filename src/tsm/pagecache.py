"""Read-only files that libraries map into the process. A page of such a file that the
process has touched stays mapped, and counted in its RSS, until the mapping goes, even if it
is never read again: Sudachi's dictionary reads 72 of its 192 MB once while it opens
(docs/architecture.md, resident memory). `leave_to_page_cache` unmaps those pages from this
process only; they stay in the kernel's page cache, so reading one again costs a minor fault,
not a disk read, and the kernel can reclaim them like any cached file."""

from __future__ import annotations

import ctypes
import mmap
import sys
from pathlib import Path
from typing import NamedTuple

MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)


def mapped_ranges(path: Path, maps: str | None = None) -> list[tuple[int, int]]:
    """(start, end) addresses of this process's read-only mappings of `path` (Linux
    /proc/self/maps; `maps` is its text, for tests). Writable mappings are left out: dropping
    their pages would drop what the process wrote."""
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text()
        except OSError:
            return []
    target = str(path)
    ranges = []
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == target and "w" not in fields[1]:
            start, end = fields[0].split("-")
            ranges.append((int(start, 16), int(end, 16)))
    return ranges


class Mapping(NamedTuple):
    """One mapping of a file in a process (a line of smaps and its counters)."""

    start: int
    end: int
    perms: str
    path: str
    rss_kb: int
    anonymous_kb: int  # pages the process wrote (copy-on-write): not the file's any more


def file_mappings(pid: int | str = "self") -> list[Mapping]:
    """The file-backed mappings of process `pid`, from /proc/PID/smaps (empty without it)."""
    try:
        smaps = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return []
    out: list[Mapping] = []
    head: list[str] | None = None
    counters: dict[str, int] = {}

    def flush() -> None:
        if head is not None and len(head) == 6 and head[5].startswith("/"):
            start, end = head[0].split("-")
            out.append(
                Mapping(
                    int(start, 16),
                    int(end, 16),
                    head[1],
                    head[5],
                    counters.get("Rss", 0),
                    counters.get("Anonymous", 0),
                )
            )

    for line in smaps.splitlines():
        fields = line.split(maxsplit=5)
        if "-" in fields[0] and ":" not in fields[0]:
            flush()
            head, counters = fields, {}
        elif fields[0] in ("Rss:", "Anonymous:"):
            counters[fields[0][:-1]] = int(fields[1])
    flush()
    return out


def resident_kb(path: Path, pid: int | str = "self") -> int:
    """KiB of `path` mapped into process `pid` (Rss over every mapping of the file): what
    the file adds to that process's RSS. 0 where there is no /proc."""
    target = str(path.resolve())
    return sum(m.rss_kb for m in file_mappings(pid) if m.path == target)


def leave_file_pages_to_page_cache() -> int:
    """Unmap, from this process, the pages of every file mapping that only reads its file
    (libraries' code and constants, model files): what loading a library or a model read
    once leaves the RSS, and what is used again comes back from the page cache at the next
    touch. A mapping holding pages the process wrote (a library's relocated constants) is
    left alone; those pages exist nowhere else. The bytes of address space advised.

    Call it only while no other thread of the process maps files (loads a library): the
    ranges are listed first, and a mapping made over one of them and written to before the
    advice would lose what was written (MADV_DONTNEED drops a private page)."""
    if not sys.platform.startswith("linux"):
        return 0
    ranges = [
        (m.start, m.end)
        for m in file_mappings()
        if "w" not in m.perms and m.anonymous_kb == 0 and m.rss_kb
    ]
    return _madvise(ranges, MADV_DONTNEED)


def advise(path: Path, advice: int) -> int:
    """madvise(`advice`) on this process's read-only mappings of `path`; the bytes of address
    space advised. Nothing happens where the kernel has no /proc/self/maps or madvise
    (macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return 0
    return _madvise(mapped_ranges(path.resolve()), advice)


def _madvise(ranges: list[tuple[int, int]], advice: int) -> int:
    if not ranges:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.restype = ctypes.c_int
    advised = 0
    for start, end in ranges:
        if libc.madvise(start, end - start, advice) == 0:
            advised += end - start
    return advised


def leave_to_page_cache(path: Path) -> int:
    """Unmap the pages of `path` that this process holds resident (it reads them again, from
    the page cache, when it next needs them); the bytes of address space advised."""
    return advise(path, MADV_DONTNEED)
