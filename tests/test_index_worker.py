"""What an index worker (indexing.parse_file) hands back to the writer."""

from __future__ import annotations

from pathlib import Path

from tsm import indexing
from tsm.config import load
from tsm.sources.files import Reach


def test_a_worker_sends_back_the_chunks_and_not_the_sections(tmp_path: Path) -> None:
    """The writer stores the chunks made in the worker and never reads the sections: sent
    back, they were a second copy of every text to pickle and unpickle."""
    root = tmp_path / "vault"
    root.mkdir()
    text = "Traps report each capture. " * 40
    note = root / "note.md"
    note.write_text(f"# Field\n\n{text}\n\n## Batteries\n\n{text}\n", encoding="utf-8")
    settings = load(root, {"TSM_INDEX_ROOT": str(root), "TSM_STATE_DIR": str(tmp_path / "st")})
    indexing.start_parsing(settings, Reach.of(settings.index_root))
    parsed = indexing.parse_file(note, "note.md")
    assert parsed is not None and parsed.doc is not None and parsed.prepared is not None
    assert parsed.doc.sections == ()
    assert {r.chunk.section for r in parsed.prepared.rows} == {"Field", "Field > Batteries"}
    assert parsed.doc.text.count("Traps report") == 80  # the document's own text is kept
