"""Query-word synonyms from `<state dir>/synonyms.csv` (two columns, `#` comments). The file
is re-read whenever it changes, so edits apply to the next search with no sync step."""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import UnsafePath
from ..statedir import read_state_file

_cache: dict[Path, tuple[float, dict[str, set[str]]]] = {}
_lock = threading.Lock()


def load_synonyms(path: Path, normalize: Callable[[str], list[str]]) -> dict[str, set[str]]:
    """term → the terms it expands to, both ways. Each cell is tokenized like a query, so
    multi-word and Japanese entries match the way queries are split."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    with _lock:
        cached = _cache.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
    table: dict[str, set[str]] = {}
    try:
        # Regular, not a link, capped (statedir.read_state_file): a cloned repository's
        # `.tsm/synonyms.csv -> /dev/zero` read every search until memory ran out.
        data = read_state_file(path)
        text = io.StringIO("" if data is None else data.decode("utf-8"), newline="")
    except (OSError, UnicodeDecodeError, UnsafePath):
        return {}
    lines = [line for line in text if line.strip() and not line.lstrip().startswith("#")]
    for row in csv.reader(lines):
        cells = [c.strip() for c in row if c.strip()]
        if len(cells) < 2:
            continue
        left, right = normalize(cells[0]), normalize(cells[1])
        if len(left) == 1:
            table.setdefault(left[0], set()).update(right)
        if len(right) == 1:
            table.setdefault(right[0], set()).update(left)
    with _lock:
        _cache[path] = (mtime, table)
    return table


def expand(terms: Sequence[str], table: dict[str, set[str]]) -> list[str]:
    """Terms added by synonyms that the query does not already contain."""
    have = set(terms)
    extra: dict[str, None] = {}
    for term in terms:
        for other in sorted(table.get(term, ())):
            if other not in have:
                extra[other] = None
    return list(extra)
