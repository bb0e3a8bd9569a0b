"""PDF files: text per page, the page number kept on each section (pypdf, imported lazily).

A PDF is parsed in a child process of its own (`python -m tsm.sources.pdf`), bounded in
memory, CPU time and wall time: pypdf caps each decompressed stream (75 MB), not their sum
nor the work they cost, so a 7 MB file of a hundred compressed streams of zeros took 6.8 GB
and a 300 kB one of 2,000 pages sharing one 70 MB content stream ran for over 5 minutes. Past
a bound the file is skipped with its reason and the run goes on."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..models import Document, Section
from .base import SkipFile, cut

# Compressed streams make a PDF's text far larger than its bytes (pypdf caps each stream at
# 75 MB, not their sum); 20 million characters is a 10,000-page book.
MAX_TEXT_CHARS = 20_000_000
# The child's bounds: its address space (a 10,000-page text PDF needs a few hundred MB) and
# CPU seconds; wall time is twice the CPU time (a loaded machine, a nice'd run).
MEMORY_MB = 1024
CPU_SECONDS = 120


def read(
    path: Path,
    rel: str,
    data: bytes,
    max_chars: int = MAX_TEXT_CHARS,
    cpu_seconds: int = CPU_SECONDS,
) -> Document:
    pages, meta_title = _extract_in_child(data, max_chars, cpu_seconds)
    sections = tuple(
        Section(heading="", text=_clean(text), page=n) for n, text in pages if text.strip()
    )
    if not sections:
        raise SkipFile("PDF has no extractable text (scanned?)")
    title = _clean(meta_title) if meta_title else ""
    title = cut(" ".join(title.split())) or path.stem
    return Document(
        path=rel,
        type="pdf",
        title=title,
        text="\n\n".join(s.text for s in sections),
        sections=sections,
    )


def _extract_in_child(
    data: bytes, max_chars: int, cpu_seconds: int
) -> tuple[list[tuple[int, str]], str | None]:
    """(page number, text) for each page and the /Title, read by a bounded child process."""
    from ..launcher import python

    command = python("-m", "tsm.sources.pdf", str(max_chars), str(cpu_seconds))
    try:
        proc = subprocess.run(
            command,
            input=data,
            capture_output=True,
            timeout=2 * cpu_seconds,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        )
    except subprocess.TimeoutExpired:
        raise SkipFile(f"PDF took longer than {2 * cpu_seconds} s to read") from None
    except OSError as exc:
        raise SkipFile(f"cannot start the PDF reader: {exc}", transient=True) from None
    if proc.returncode == -signal.SIGXCPU or proc.returncode == -signal.SIGKILL:
        raise SkipFile(f"PDF took more than {cpu_seconds} s of CPU to read")
    try:
        answer = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no answer"]
        if "MemoryError" in tail[0]:
            raise SkipFile(f"PDF needs more than {MEMORY_MB} MB of memory to read")
        raise SkipFile(f"unreadable PDF: the reader failed ({tail[0][:200]})")
    if "skip" in answer:
        raise SkipFile(str(answer["skip"]))
    pages = [(int(n), str(text)) for n, text in answer["pages"]]
    title = answer.get("title")
    return pages, (str(title) if title else None)


def extract(data: bytes, max_chars: int) -> dict[str, Any]:
    """The child's work: {"pages": [[n, text], …], "title": …} or {"skip": reason}."""
    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed PDFs are noisy, not fatal
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # Many PDFs are encrypted with an owner password only: they open with an empty one.
        if reader.is_encrypted and not reader.decrypt(""):
            return {"skip": "encrypted PDF"}
        pages, total = [], 0
        for n, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            total += len(text)
            if total > max_chars:
                return {"skip": f"PDF text longer than {max_chars:,} characters (page {n})"}
            pages.append((n, text))
        meta_title = reader.metadata.get("/Title") if reader.metadata else None
    except MemoryError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files
        return {"skip": f"unreadable PDF: {exc}"}
    return {"pages": pages, "title": str(meta_title) if meta_title else None}


def _clean(text: str) -> str:
    """Text as the index can store it: no NULs, no lone surrogates (a broken ToUnicode map can
    produce them, and SQLite cannot encode them), no trailing blanks."""
    text = text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    return "\n".join(line.rstrip() for line in text.splitlines()).strip()


def _child(max_chars: int, cpu_seconds: int) -> None:
    import resource

    for limit, value in (
        (resource.RLIMIT_AS, MEMORY_MB * 1024 * 1024),
        (resource.RLIMIT_CPU, cpu_seconds),
    ):
        soft, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        if soft == resource.RLIM_INFINITY or soft > value:
            resource.setrlimit(limit, (value, hard))
    answer = extract(sys.stdin.buffer.read(), max_chars)
    # surrogates (a broken ToUnicode map) pass through; the parent's _clean replaces them
    sys.stdout.buffer.write(json.dumps(answer).encode("ascii"))


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]))
