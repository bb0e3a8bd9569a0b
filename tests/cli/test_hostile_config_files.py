"""A repository's `tsm.toml` as a file, not as settings: every command reads it, so it is
read as tsm reads any file it did not write (statedir.read_regular), capped, a regular file
only; a link to one (a dotfiles manager's) still works."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_a_huge_tsm_toml_is_a_user_error(tmp_path: Path, tsm: Any) -> None:
    """tomllib read it whole, whatever its size (2.4 MB of comments: parsed on every
    command; a few hundred MB: as much memory again)."""
    root = tmp_path / "clone"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nwords\n")
    (root / "tsm.toml").write_text("# comment\n" * 240_000)
    result = tsm("index", "--no-embed", "-f", "json", cwd=root, timeout=120)
    assert result.code == 1, result.err
    error = result.error()
    assert error["kind"] == "user_error"
    assert error["error"] == f"{root / 'tsm.toml'} is larger than 1024 kB", error


def test_a_linked_tsm_toml_is_still_read(tmp_path: Path, tsm: Any) -> None:
    root = tmp_path / "clone"
    root.mkdir()
    for name in ("a", "b", "c", "d"):
        (root / f"{name}.md").write_text(f"# {name}\n\nwords\n")
    kept = tmp_path / "dotfiles" / "tsm.toml"
    kept.parent.mkdir()
    kept.write_text("[search]\ntop_k = 2\n")
    (root / "tsm.toml").symlink_to(kept)
    assert tsm("index", "--no-embed", "-f", "json", cwd=root, timeout=120).code == 0
    result = tsm("search", "words", "--fts-only", "-f", "json", cwd=root)
    assert result.code == 0, result.err
    assert len(result.json()["results"]) == 2
