"""A note's names (title, headings, aliases, tags) are stored with every one of its chunks,
so a note made of huge names grew the index by their size times its length: an 830 kB note
whose first heading was 270 kB made a 685 MB index, a 970 kB note of 120,000 inline tags
took 93 s to index. Through the real CLI: the index stays proportional to the note, and the
words of a long heading are still found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PARAGRAPHS = "".join(f"wombat paragraph {i} with words to fill a chunk.\n\n" for i in range(4000))


def index_size(root: Path) -> int:
    return sum(f.stat().st_size for f in (root / ".tsm").glob("tsm.db*"))


def test_huge_names_do_not_multiply_the_index(tmp_path: Path, tsm: Any, monkeypatch: Any) -> None:
    root = tmp_path / "clone"
    root.mkdir()
    monkeypatch.setenv("TSM_INDEX_ROOT", str(root))
    heading = " ".join(f"h{i}" for i in range(15000))  # 100 kB
    (root / "heading.md").write_text(f"# {heading} quasimodox\n\n{PARAGRAPHS}")
    aliases = ", ".join([f'"{"x" * 600}"', *(f'"alias {i}"' for i in range(300))])
    tags = ", ".join(f"t{i}" for i in range(5000))  # frontmatter: 40 kB of the 64 kB read
    (root / "front.md").write_text(f"---\naliases: [{aliases}]\ntags: [{tags}]\n---\n{PARAGRAPHS}")
    size = sum(f.stat().st_size for f in root.glob("*.md"))
    result = tsm("index", "--no-embed", "-f", "json", timeout=600)
    assert result.code == 0, result.err
    assert index_size(root) < 10 * size, (index_size(root), size)
    found = tsm("search", "quasimodox", "--fts-only", "-f", "json")
    assert [r["source"]["path"] for r in found.json()["results"]] == ["heading.md"]
    info = tsm("info", "front.md", "-f", "json").json()
    assert len(info["tags"]) == 100 and info["tags"][0] == "t0"
    assert info["aliases"][0] == "alias 0" and len(info["aliases"]) == 50  # 600 x: no name
    title = tsm("info", "heading.md", "-f", "json").json()["title"]
    assert title.startswith("h0 h1 h2") and title.endswith("…") and len(title) == 500
