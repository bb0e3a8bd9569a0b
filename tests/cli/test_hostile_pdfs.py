"""PDFs built to exhaust the reader, through the real CLI: pypdf bounds each decompressed
stream (75 MB), not their sum nor the work they cost. Each such PDF costs one skipped file
with its reason, in bounded memory and time; the run indexes the rest."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from tsm.sources import SkipFile, pdf

FONT = b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"


def build_pdf(contents: list[bytes], pages: list[int]) -> bytes:
    """A PDF whose page i draws content stream pages[i] (streams may be shared)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    first_stream = 3
    for data in contents:
        packed = zlib.compress(data, 9)
        objects.append(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed)
            + packed
            + b"\nendstream"
        )
    kids = []
    for stream in pages:
        kids.append(b"%d 0 R" % (len(objects) + 1))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] "
            + FONT
            + b" /Contents %d 0 R >>" % (first_stream + stream)
        )
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_decompression_bomb_pdf_is_skipped_in_bounded_memory(vault: Path, tsm: Any) -> None:
    """20 pages, each its own 70 MB stream of zeros (1.4 MB on disk, under the size cap):
    decoded in the indexing process they held 1.4 GB at once (6.8 GB for 100 of them)."""
    zeros = b"\0" * 70_000_000
    (vault / "research" / "bomb.pdf").write_bytes(build_pdf([zeros] * 20, list(range(20))))
    (vault / "notes" / "zz-after.md").write_text("# After\n\nquokkadile\n")
    result = tsm("index", "-f", "json", "--no-embed", timeout=300)
    assert result.code == 0, result.err
    why = {s["path"]: s["reason"] for s in result.json()["skipped"]}
    assert why["research/bomb.pdf"] == (
        f"PDF needs more than {pdf.MEMORY_MB} MB of memory to read"
    ), why
    listed = {d["path"] for d in tsm("list", "-f", "json").json()}
    assert {"notes/zz-after.md", "research/git-admin-guide.pdf"} <= listed


def test_pdf_that_costs_endless_work_is_given_up() -> None:
    """A 300 kB PDF of 2,000 pages sharing one 70 MB content stream: pypdf parses the stream
    again for every page (over 5 minutes). The child's CPU bound ends it."""
    data = build_pdf([b" " * 70_000_000], [0] * 2000)
    try:
        pdf.read(Path("slow.pdf"), "slow.pdf", data, cpu_seconds=3)
    except SkipFile as skip:
        # the CPU bound, or on a loaded machine the wall-time bound (twice the CPU time)
        assert str(skip) in (
            "PDF took more than 3 s of CPU to read",
            "PDF took longer than 6 s to read",
        )
    else:
        raise AssertionError("the PDF was read")
