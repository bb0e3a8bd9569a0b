"""The Japanese dictionary's pages: opening it reads 72 of its 192 MB, which tokenizing hardly
touches again, so a process keeps only what it reads afterwards resident (pagecache.py).
Measured in a fresh process: a test process's other tokenizers would blur its figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tsm.pagecache import mapped_ranges

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="resident pages are read from /proc"
)

# Resident MB of the dictionary in this process (pagecache.resident_kb reads smaps).
RESIDENT = """
def resident_mb():
    from tsm.pagecache import resident_kb
    from tsm.text.tokenizer import system_dictionary
    return resident_kb(system_dictionary()) / 1024
"""


def run(code: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", RESIDENT + code], capture_output=True, text=True, check=True
    )
    return proc.stdout.split()


def test_a_tokenizer_keeps_little_of_the_dictionary_resident() -> None:
    """Before, the 72 MB read while opening stayed resident in every process that tokenized
    Japanese, the daemon included (88 of its 185 MB at 10k chunks). Compared with the same
    process keeping them: how much a later lookup maps back depends on how the kernel holds
    the file in its page cache (a freshly installed file comes back in larger pieces)."""
    queries = (
        "from tsm.text.tokenizer import JapaneseTokenizer\n"
        "tok = JapaneseTokenizer()\n"
        "terms = [tok.query_terms(q) for q in ('狩猟免許の更新', '先月の会議で決めた予算の件')]\n"
        "print(terms[0][0], resident_mb())\n"
    )
    terms, left = run(queries)
    kept_terms, kept = run(
        "import tsm.text.tokenizer\ntsm.text.tokenizer.leave_to_page_cache = lambda path: 0\n"
        + queries
    )
    assert terms == kept_terms == "狩猟"
    assert float(kept) - float(left) > 40, f"{left} MB resident against {kept} MB kept"


def test_trim_leaves_what_indexing_read_to_the_page_cache() -> None:
    """Indexing varied Japanese text reads pages all over the dictionary; `trim_tokenizer`
    (the daemon's writer calls it after each job that tokenized documents) unmaps them."""
    before, after = run(
        "import random\n"
        "from tsm.text.tokenizer import get_tokenizer, trim_tokenizer\n"
        "rng = random.Random(3)\n"
        "letters = [chr(c) for c in range(0x3041, 0x3097)]\n"
        "letters += [chr(c) for c in range(0x4e00, 0x9fa0)]\n"
        "get_tokenizer().index_text(''.join(rng.choice(letters) for _ in range(20000)))\n"
        "before = resident_mb()\n"
        "trim_tokenizer()\n"
        "print(before, resident_mb())\n"
    )
    assert float(before) > 40  # the text did read much of it
    assert float(after) < 5


def test_only_read_only_mappings_of_the_file_are_dropped() -> None:
    maps = (
        "7f0000000000-7f0000100000 r--s 00000000 fd:00 12 /lib/system.dic\n"
        "7f0000100000-7f0000200000 rw-p 00000000 fd:00 12 /lib/system.dic\n"
        "7f0000200000-7f0000300000 r--p 00000000 fd:00 13 /lib/system.dic.old\n"
        "7f0000300000-7f0000400000 r--p 00000000 fd:00 14 /lib/with space/system.dic\n"
    )
    assert mapped_ranges(Path("/lib/system.dic"), maps) == [(0x7F0000000000, 0x7F0000100000)]
    assert mapped_ranges(Path("/lib/with space/system.dic"), maps) == [
        (0x7F0000300000, 0x7F0000400000)
    ]


def test_resident_kb_counts_the_pages_a_mapping_touched(tmp_path: Path) -> None:
    import mmap

    from tsm.pagecache import leave_to_page_cache, resident_kb

    path = tmp_path / "file.bin"
    path.write_bytes(b"x" * (1 << 20))
    assert resident_kb(path) == 0
    with open(path, "rb") as fh:
        mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        assert mapping[0] == mapping[(1 << 20) - 1] == ord("x")
        assert resident_kb(path) >= 8  # at least the two pages read
        assert leave_to_page_cache(path) == 1 << 20
        assert resident_kb(path) == 0
    finally:
        mapping.close()


def test_file_pages_a_process_wrote_are_never_dropped(tmp_path: Path) -> None:
    """leave_file_pages_to_page_cache unmaps read-only file mappings; one the process wrote
    to and then made read-only (a library's relocated constants) holds the only copy of
    what it wrote, so it is left alone, while a plain read-only mapping is unmapped."""
    import ctypes
    import mmap

    from tsm.pagecache import leave_file_pages_to_page_cache, resident_kb

    written, read = tmp_path / "relocated.bin", tmp_path / "read.bin"
    written.write_bytes(b"\0" * 8192)
    read.write_bytes(b"r" * 8192)
    with open(written, "r+b") as fh:
        private = mmap.mmap(fh.fileno(), 8192, flags=mmap.MAP_PRIVATE)
    with open(read, "rb") as fh:
        plain = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    private[0] = 7  # copy-on-write: this page is the process's own now
    address = ctypes.addressof(ctypes.c_char.from_buffer(private))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(address, 8192, mmap.PROT_READ) == 0
    try:
        assert plain[0] == ord("r") and resident_kb(read) > 0
        assert leave_file_pages_to_page_cache() > 0
        assert resident_kb(read) == 0
        assert ctypes.c_char.from_address(address).value == b"\x07"
    finally:
        libc.mprotect(address, 8192, mmap.PROT_READ | mmap.PROT_WRITE)
        plain.close()
