"""A cloned repository's own `tsm.toml` with numbers no one should be able to set, through the
real CLI in a root the user never trusted: NaN and infinity (TOML floats), zero and numbers
far past any use. Each is a one-line user error naming the file, key and value; never a hang
(`chunking.max_chars = 0` split every text forever), never a system error from deep in a
search, never NaN or Infinity in the JSON. So is a NUL character in a folder's name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

HOSTILE = [
    ("[chunking]\nmax_chars = 0\n", "chunking.max_chars"),
    ("[chunking]\nmax_chars = 1\n", "chunking.max_chars"),
    ("[search]\ncandidates = 9223372036854775807\n", "search.candidates"),
    ("[search]\ntop_k = 0\n", "search.top_k"),
    ("[search]\nrrf_k = inf\n", "search.rrf_k"),
    ("[search]\nkeyword_parity = nan\n", "search.keyword_parity"),
    ("[embedding]\nbatch_size = 0\n", "embedding.batch_size"),
    ("[index]\nmax_file_mb = inf\n", "index.max_file_mb"),
    ("[index]\nmax_file_mb = nan\n", "index.max_file_mb"),
    ("[sessions]\nweight = inf\n", "sessions.weight"),
    ("[ranking]\nhalf_life_days = -inf\n", "ranking.half_life_days"),
    ('[[content_dirs]]\npath = "notes"\nweight = nan\n', "content_dirs.weight"),
    ('[[content_dirs]]\npath = "notes"\nweight = inf\n', "content_dirs.weight"),
    ('[[content_dirs]]\npath = "notes"\nhalf_life_days = nan\n', "content_dirs.half_life_days"),
    ("[status_weights]\ndraft = 1e308\n", "status_weights.draft"),
    ("[status_weights]\ndraft = nan\n", "status_weights.draft"),
    # NUL is valid TOML; in a path it failed deep in the OS ("unexpected error: ValueError")
    ('[[content_dirs]]\npath = "notes\\u0000x"\n', "content_dirs"),
    ('[sessions]\ndirs = ["notes\\u0000"]\n', "sessions.dirs"),
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An untrusted clone: a note, no trust, the CLI run from inside it."""
    root = tmp_path / "clone"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text(
        "---\nstatus: draft\n---\n# Widgets\n\n" + "widgets are small parts. " * 40,
        encoding="utf-8",
    )
    return root


@pytest.mark.parametrize(("toml", "key"), HOSTILE)
def test_hostile_number_is_a_user_error(repo: Path, tsm: Any, toml: str, key: str) -> None:
    (repo / "tsm.toml").write_text(toml, encoding="utf-8")
    for args in (("index", "--no-embed"), ("search", "widgets", "--fts-only")):
        result = tsm(*args, "-f", "json", cwd=repo, timeout=60)
        assert result.code == 1, (args, result.out, result.err)
        error = result.error()
        assert error["kind"] == "user_error"
        assert str(repo / "tsm.toml") in error["error"] and key in error["error"], error
        assert "NaN" not in result.out and "Infinity" not in result.out


def test_bounds_still_take_ordinary_values(repo: Path, tsm: Any) -> None:
    (repo / "tsm.toml").write_text(
        "[chunking]\nmax_chars = 100\n[search]\ncandidates = 100000\ntop_k = 10000\n"
        '[[content_dirs]]\npath = "notes"\nweight = 2.5\n[status_weights]\ndraft = 0\n',
        encoding="utf-8",
    )
    index = tsm("index", "--no-embed", "-f", "json", cwd=repo, timeout=60)
    assert index.code == 0, index.err
    assert index.json()["chunks"] > 1  # 1,000 characters cut at 100
    search = tsm("search", "widgets", "--fts-only", "-f", "json", cwd=repo, timeout=60)
    assert search.code == 0, search.err
    assert [r["score"] for r in search.json()["results"]][:1] == [0.0]  # draft weighs 0
