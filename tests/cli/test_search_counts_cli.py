"""A hybrid search shows what its signals found and says it in words that agree: a note
the vectors list only because every note is somewhere in their ranking (no nearer to the
query than the query's mean chunk, a vector term of 0) is no result, and results that
match nothing are called the nearest in meaning, not "top N of 0 matches". Through the
real CLI and model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

NOTES = {
    "shell.md": "# Shell setup\n\nInstall zsh and set it as the login shell with chsh.\n",
    "lora.md": "# LoRa modules\n\nThe SX1276 LoRa module reaches further than the RFM95.\n",
    "bread.md": "# Bread\n\nKnead the dough for ten minutes, then let it rise.\n",
    "hunt.md": "# 狩猟\n\n罠の見回りをした。\n",
}
UNRELATED = "quantum chromodynamics lattice"


@pytest.fixture
def vault(tmp_path: Path, tsm: Any) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    done = tsm("index", "-f", "json", env={"TSM_INDEX_ROOT": str(root)})
    assert done.code == 0, done.err
    return root


def search(tsm: Any, root: Path, *args: str) -> Any:
    return tsm("search", *args, env={"TSM_INDEX_ROOT": str(root)})


@pytest.mark.parametrize("mode", [(), ("--vec-only",)])
def test_no_result_without_a_signal(tsm: Any, vault: Path, mode: tuple[str, ...]) -> None:
    done = search(tsm, vault, UNRELATED, "-f", "json", *mode)
    assert done.code == 0, done.err
    found = done.json()
    assert found["results"], "the nearest notes are still shown"
    assert all(r["score"] > 0 for r in found["results"]), found["results"]
    assert found["returned"] < len(NOTES)


def test_the_header_says_what_is_shown(tsm: Any, vault: Path) -> None:
    found = search(tsm, vault, UNRELATED, "-f", "json").json()
    assert found["total_matches"] == 0
    header = search(tsm, vault, UNRELATED, "-f", "human").out.splitlines()[0]
    assert header.endswith(f"(no matches; showing the {found['returned']} nearest in meaning)")
    assert "[0.000]" not in search(tsm, vault, UNRELATED, "-f", "human").out
    matched = search(tsm, vault, "zsh", "--fts-only", "-f", "human").out.splitlines()[0]
    assert matched.endswith("(1 match, showing top 1)")
