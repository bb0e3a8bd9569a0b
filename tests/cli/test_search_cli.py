"""`tsm search` end to end: the real CLI on the sample vault with the real default model,
its JSON checked field by field against skill-interface.md and CONTRACT.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SOURCE_FIELDS = {
    "document_id": int,
    "title": str,
    "path": str,
    "type": str,
    "chunk_index": int,
    "total_chunks": int,
    "tags": list,
    "category": str,
}


def check_contract(data: dict, mode: str) -> None:
    assert set(data) >= {
        "query",
        "results",
        "total_matches",
        "returned",
        "mode",
        "took_ms",
        "filters",
        "warnings",
    }
    assert data["mode"] == mode
    assert data["returned"] == len(data["results"])
    # keyword hits all match; the vector side may also show nearest notes that are not
    # matches (below the relevance floor)
    assert data["total_matches"] >= (data["returned"] if mode == "fts" else 0)
    assert isinstance(data["took_ms"], float | int) and isinstance(data["warnings"], list)
    for hit in data["results"]:
        assert isinstance(hit["chunk_id"], int) and isinstance(hit["score"], float)
        assert isinstance(hit["text"], str) and hit["text"]
        assert isinstance(hit["section"], str) and isinstance(hit["related"], list)
        assert isinstance(hit["snippet"], str) and len(hit["snippet"]) <= 200
        breakdown = hit["score_breakdown"]
        assert set(breakdown) >= {"fts", "vector"}
        if mode == "fts":
            assert breakdown["vector"] is None and isinstance(breakdown["fts"], float)
        if mode == "vector":
            assert breakdown["fts"] is None and isinstance(breakdown["vector"], float)
        source = hit["source"]
        for name, kind in SOURCE_FIELDS.items():
            assert isinstance(source[name], kind), (name, source)
        assert "page" in source and set(source) >= {"status", "created", "updated"}
        assert source["type"] in {"markdown", "pdf", "text", "session"}
        for rel in hit["related"]:
            assert set(rel) == {"path", "link_type", "strength"}
    scores = [h["score"] for h in data["results"]]
    assert scores == sorted(scores, reverse=True)


def paths(data: dict) -> list[str]:
    return [h["source"]["path"] for h in data["results"]]


def test_kb_search_install_git_json(indexed_read_only: Path, tsm: Any) -> None:
    result = tsm("search", "install git", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    check_contract(data, "hybrid")
    assert data["query"] == "install git"
    top = paths(data)[:3]
    assert "notes/git-install.md" in top
    pdf_hits = [h for h in data["results"] if h["source"]["type"] == "pdf"]
    assert pdf_hits and pdf_hits[0]["source"]["page"] == 1
    git = next(h for h in data["results"] if h["source"]["path"] == "notes/git-install.md")
    assert git["source"]["tags"] == ["git", "setup"] and git["source"]["status"] == "current"
    assert git["source"]["category"] == "notes"
    assert any(
        r["path"] == "notes/shell-setup.md" for r in git["related"]
    ) or "notes/shell-setup.md" in paths(data)


@pytest.mark.parametrize("mode_flag,mode", [("--fts-only", "fts"), ("--vec-only", "vector")])
def test_single_signal_modes(indexed_read_only: Path, tsm: Any, mode_flag: str, mode: str) -> None:
    result = tsm("search", "install git", mode_flag, "-f", "json")
    assert result.code == 0, result.err
    check_contract(result.json(), mode)


@pytest.mark.parametrize("word", ["狩猟", "免許", "捕獲", "報告", "アプリ", "捕獲報告アプリ"])
def test_japanese_words_and_compound_parts(indexed_read_only: Path, tsm: Any, word: str) -> None:
    result = tsm("search", word, "--fts-only", "-f", "json")
    assert result.code == 0, result.err
    assert paths(result.json())[0] == "daily/2026-03-15.md"


def test_cross_lingual_query_finds_japanese_note(indexed_read_only: Path, tsm: Any) -> None:
    result = tsm("search", "hunting license application", "--vec-only", "-k", "3", "-f", "json")
    assert result.code == 0, result.err
    assert "daily/2026-03-15.md" in paths(result.json())


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "git*",
        "-git",
        "git AND",
        "(git",
        "NEAR(",
        "title:git",
        "OR",
        "NOT git",
        "^git",
    ],
)
def test_fts_syntax_is_plain_text(indexed_read_only: Path, tsm: Any, query: str) -> None:
    result = tsm("search", f"--query={query}", "--fts-only", "-f", "json")
    assert result.code == 0, result.err
    check_contract(result.json(), "fts")
    assert result.json()["query"] == query


def test_punctuation_only_query_returns_nothing_with_warning(
    indexed_read_only: Path, tsm: Any
) -> None:
    result = tsm("search", "?!…。", "--fts-only", "-f", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["results"] == [] and data["warnings"]


@pytest.mark.parametrize("args", [("search", ""), ("search",), ("search", "   ")])
def test_empty_query_is_a_user_error(
    indexed_read_only: Path, tsm: Any, args: tuple[str, ...]
) -> None:
    result = tsm(*args, "-f", "json")
    assert result.code == 1
    assert result.error()["kind"] == "user_error"
    assert "Traceback" not in result.err


def test_a_query_past_the_length_limit_is_a_user_error(indexed_read_only: Path, tsm: Any) -> None:
    """A document pasted as a query is refused at once; a query at the limit is searched."""
    from tsm.search.query import MAX_QUERY_CHARS

    words = ("git install windows sqlite notes " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    assert tsm("search", words, "--fts-only", "-f", "json").code == 0
    result = tsm("search", words + "x", "--fts-only", "-f", "json")
    assert result.code == 1 and result.error()["kind"] == "user_error"
    assert "10,001 characters long" in result.error()["error"]


@pytest.mark.parametrize(
    "args",
    [
        ("search", "git", "-k", "zero"),
        ("search", "git", "--bogus"),
        ("frobnicate",),
        ("search", "git", "--after", "2025-13-01"),
        ("search", "git", "--recent", "3x"),
        ("search", "git", "--path", "/etc"),
        ("search", "git", "--type", "docx"),
        ("search", "git", "--fts-only", "--vec-only"),
        ("search", "git", "-k", "0"),
    ],
)
def test_bad_flags_exit_1(indexed_read_only: Path, tsm: Any, args: tuple[str, ...]) -> None:
    result = tsm(*args, "-f", "json")
    assert result.code == 1, (result.out, result.err)
    assert result.error()["kind"] == "user_error"
    assert "Traceback" not in result.err


@pytest.mark.sqlite_only("a server store always exists: its tables are made on first use")
def test_missing_index_is_a_clear_user_error(vault: Path, tsm: Any) -> None:
    result = tsm("search", "git", "-f", "json")
    assert result.code == 1
    assert "tsm index" in result.error()["error"]


@pytest.mark.sqlite_only("a damaged SQLite file")
def test_corrupt_index_is_a_system_error(vault: Path, tsm: Any) -> None:
    state = vault / ".tsm"
    state.mkdir()
    (state / "tsm.db").write_bytes(b"this is not a database" * 100)
    result = tsm("search", "git", "-f", "json")
    assert result.code == 2
    error = result.error()
    assert error["kind"] == "system_error" and "rebuild" in error["error"]
    human = tsm("search", "git", "-f", "human")
    assert human.code == 2 and human.err.startswith("tsm: error:")
    assert "Traceback" not in human.err


def test_human_format(indexed_read_only: Path, tsm: Any) -> None:
    result = tsm("search", "install git", "-f", "human")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith('Search: "install git" (')
    assert any(line.startswith("1. [") for line in lines)
    assert "notes/git-install.md" in result.out


def test_text_is_an_alias_of_human(indexed_read_only: Path, tsm: Any) -> None:
    assert tsm("search", "git", "-f", "text").out == tsm("search", "git", "-f", "human").out


def test_json_is_the_default_when_piped(indexed_read_only: Path, tsm: Any) -> None:
    check_contract(tsm("search", "git").json(), "hybrid")


def test_query_flag_and_top_k(indexed_read_only: Path, tsm: Any) -> None:
    data = tsm("search", "-q", "git", "-k", "1").json()
    assert data["returned"] == 1 and data["total_matches"] >= 1


def test_include_content(indexed_read_only: Path, tsm: Any) -> None:
    data = tsm("search", "install git", "--include-content", "1").json()
    assert "content" in data["results"][0] and "content" not in data["results"][1]
    assert (
        "sudo apt-get install git" in data["results"][0]["content"]
        or data["results"][0]["source"]["type"] == "pdf"
    )


def test_vanished_file_is_dropped(indexed: Path, tsm: Any) -> None:
    (indexed / "notes" / "shell-setup.md").unlink()
    data = tsm("search", "aliases bashrc PATH", "--fts-only").json()
    assert "notes/shell-setup.md" not in paths(data)
    assert any("no longer exists" in w for w in data["warnings"])


def test_changed_file_is_flagged_stale(indexed: Path, tsm: Any) -> None:
    note = indexed / "notes" / "shell-setup.md"
    note.write_text(note.read_text() + "\nmore text about aliases\n")
    data = tsm("search", "aliases bashrc", "--fts-only").json()
    hit = next(h for h in data["results"] if h["source"]["path"] == "notes/shell-setup.md")
    assert hit["source"]["stale"] is True
    assert any("changed since" in w for w in data["warnings"])


def test_a_removed_working_directory_is_a_user_error(tmp_path: Path) -> None:
    """No traceback, no "unexpected error": the one-line message of the contract."""
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"cd {gone} && rmdir {gone} && exec {sys.executable} -m tsm search git -f json"
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith('{"error": "the current directory no longer exists')
