"""Files that are not what they seem, through the real CLI: symlinks out of the index root,
FIFOs and devices, files over the size cap, undecodable names. Each one
costs a skipped entry with a reason; the run goes on and nothing outside the root is read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from swap import link_swapped

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SECRET = "plumbicornium"  # a word that appears only in the file outside the root


def index(tsm: Any, *args: str, **kw: Any) -> dict:
    result = tsm("index", "-f", "json", "--no-embed", *args, timeout=60, **kw)
    assert result.code == 0, result.err
    return result.json()


def reasons(data: dict) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in data["skipped"]}


def listed(tsm: Any) -> set[str]:
    return {d["path"] for d in tsm("list", "-f", "json").json()}


def found(tsm: Any, word: str) -> list[str]:
    result = tsm("search", word, "--fts-only", "-f", "json")
    assert result.code == 0, result.err
    return [r["source"]["path"] for r in result.json()["results"]]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A private file and a folder next to the vault, never inside it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = folder / "secret.md"
    secret.write_text(f"# Private\n\n{SECRET}\n", encoding="utf-8")
    secret.chmod(0o600)
    (folder / "more.txt").write_text(f"{SECRET} in a text file\n", encoding="utf-8")
    return folder


def test_symlinked_file_out_of_the_root_is_skipped(vault: Path, tsm: Any, outside: Path) -> None:
    links = vault / "links"
    links.mkdir()
    (links / "secret.md").symlink_to(outside / "secret.md")
    (links / "relative.md").symlink_to(Path("../../outside/secret.md"))
    (links / "inside.md").symlink_to(vault / "notes" / "shell-setup.md")  # stays allowed
    data = index(tsm)
    why = reasons(data)
    assert why["links/secret.md"].startswith("links outside the index root")
    assert why["links/relative.md"].startswith("links outside the index root")
    assert "links/inside.md" in listed(tsm)
    assert found(tsm, SECRET) == []
    get = tsm("get", "links/secret.md", "-f", "json")
    assert get.code == 1 and SECRET not in get.out + get.err
    # named on the command line, as the PostToolUse hook and --files-from-stdin do
    data = index(tsm, "--", "links/secret.md", cwd=vault)
    assert reasons(data)["links/secret.md"].startswith("links outside the index root")
    data = index(tsm, "--files-from-stdin", input="links/relative.md\n", cwd=vault)
    assert reasons(data)["links/relative.md"].startswith("links outside the index root")
    assert found(tsm, SECRET) == []


def test_symlinked_folder_out_of_the_root_is_skipped(vault: Path, tsm: Any, outside: Path) -> None:
    (vault / "elsewhere").symlink_to(outside, target_is_directory=True)
    index(tsm)  # the walk does not follow linked folders
    assert not any(p.startswith("elsewhere/") for p in listed(tsm))
    for target in ("elsewhere", "elsewhere/secret.md", "elsewhere/more.txt"):
        data = index(tsm, target, cwd=vault)
        assert reasons(data)[target].startswith("links outside the index root"), data
    assert found(tsm, SECRET) == []


def test_indexed_file_replaced_by_a_link_out_is_removed(
    vault: Path, tsm: Any, outside: Path
) -> None:
    index(tsm)
    note = vault / "notes" / "shell-setup.md"
    assert "notes/shell-setup.md" in listed(tsm)
    note.unlink()
    note.symlink_to(outside / "secret.md")
    data = index(tsm)
    assert data["removed"] == 1
    assert reasons(data)["notes/shell-setup.md"].startswith("links outside the index root")
    assert "notes/shell-setup.md" not in listed(tsm)
    assert found(tsm, SECRET) == []
    # the same through a path named on the command line, for a folder turned into a link
    index(tsm)
    (vault / "research").rename(vault / "research-old")
    (vault / "research").symlink_to(outside, target_is_directory=True)
    before = {p for p in listed(tsm) if p.startswith("research/")}
    data = index(tsm, "research", cwd=vault)
    assert before and data["removed"] == len(before)
    assert not any(p.startswith("research/") for p in listed(tsm))


def test_link_to_an_ignored_path_is_skipped(vault: Path, tsm: Any) -> None:
    (vault / ".git").mkdir()
    (vault / ".git" / "config").write_text(f"url = https://me:{SECRET}@example.com\n")
    (vault / "notes" / "git.txt").symlink_to(vault / ".git" / "config")
    data = index(tsm)
    assert reasons(data)["notes/git.txt"].startswith("links to an ignored path")
    assert found(tsm, SECRET) == []


def test_fifo_and_devices_do_not_hang(vault: Path, tsm: Any) -> None:
    os.mkfifo(vault / "notes" / "pipe.md")
    (vault / "notes" / "zero.md").symlink_to("/dev/zero")
    (vault / "notes" / "zz-after.md").write_text("# After\n\nquokkadile\n")
    data = index(tsm)  # a FIFO read blocks for ever; /dev/zero reads until MemoryError
    why = reasons(data)
    assert why["notes/pipe.md"] == "not a regular file: a FIFO"
    assert why["notes/zero.md"].startswith("links outside the index root")
    assert found(tsm, "quokkadile") == ["notes/zz-after.md"]
    data = index(tsm, "notes/pipe.md", cwd=vault)
    assert reasons(data) == {"notes/pipe.md": "not a regular file: a FIFO"}


def test_size_cap_is_configurable(vault: Path, tsm: Any) -> None:
    big = vault / "notes" / "big.md"
    big.write_text("# Big\n\n" + "wombat " * 200_000)  # 1.4 MB
    data = index(tsm, env={"TSM_MAX_FILE_MB": "1"})
    assert reasons(data)["notes/big.md"].startswith("larger than 1 MB")
    assert "TSM_MAX_FILE_MB" in reasons(data)["notes/big.md"]
    data = index(tsm, env={"TSM_MAX_FILE_MB": "2"})
    assert "notes/big.md" in listed(tsm) and data["skipped"] == []


UNDECODABLE = b"x-\xff\xfe.md"


def test_undecodable_file_name_does_not_abort_the_run(vault: Path, tsm: Any) -> None:
    index(tsm)
    notes = os.fsencode(vault / "notes")
    with open(os.path.join(notes, UNDECODABLE), "wb") as fh:
        fh.write(b"# Odd name\n\nplatypotamus\n")
    os.mkdir(os.path.join(notes, b"dir-\xff"))
    with open(os.path.join(notes, b"dir-\xff", b"inner.md"), "wb") as fh:
        fh.write(b"# Inner\n\nplatypotamus\n")
    (vault / "notes" / "zz-later.md").write_text("# Later\n\nplatypotamus\n")
    (vault / "notes" / "reading-list.txt").unlink()  # a deletion must still be applied
    data = index(tsm)
    why = reasons(data)
    assert why["notes/x-\\xff\\xfe.md"] == "file name is not valid UTF-8; rename it to index it"
    assert why["notes/dir-\\xff/inner.md"].startswith("file name is not valid UTF-8")
    assert data["removed"] == 1 and "notes/reading-list.txt" not in listed(tsm)
    assert found(tsm, "platypotamus") == ["notes/zz-later.md"]
    # named on the command line (the PostToolUse hook) and on standard input
    name = os.fsdecode(b"notes/" + UNDECODABLE)
    data = index(tsm, "--", name, cwd=vault)
    assert list(reasons(data)) == ["notes/x-\\xff\\xfe.md"]
    # bytes on stdin, decoded strictly as UTF-8 would have raised
    proc = subprocess.run(
        [sys.executable, "-m", "tsm", "index", "-f", "json", "--no-embed", "--files-from-stdin"],
        input=b"notes/" + UNDECODABLE + b"\nnotes/zz-later.md\n",
        capture_output=True,
        cwd=vault,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert proc.returncode == 0, proc.stderr
    assert list(reasons(json.loads(proc.stdout))) == ["notes/x-\\xff\\xfe.md"]
    get = tsm("get", name, "-f", "json", cwd=vault)
    assert get.code == 1 and get.error()["kind"] == "user_error"


def test_undecodable_transcript_name_does_not_abort_the_run(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    sample = FIXTURES / "sessions" / "sample-session.jsonl"
    (sessions / "good.jsonl").write_bytes(sample.read_bytes())
    odd = os.path.join(os.fsencode(sessions), b"odd-\xff.jsonl")
    with open(odd, "wb") as fh:
        fh.write(sample.read_bytes())
    (vault / "tsm.toml").write_text(f'[sessions]\ndirs = ["{sessions}"]\n')
    data = index(tsm)
    why = reasons(data)
    shown = os.fsencode(sessions).decode() + "/odd-\\xff.jsonl"
    assert why[shown] == "file name is not valid UTF-8; rename it to index it"
    assert any(p.endswith("sessions/good.jsonl") for p in listed(tsm))
    result = tsm("ingest-session", "-f", "json", os.fsdecode(odd))
    assert result.code == 0, result.err
    assert reasons(result.json()) == {shown: "file name is not valid UTF-8; rename it to index it"}


def test_costly_or_huge_tsmignore_is_bounded(vault: Path, tsm: Any) -> None:
    """`*a*a*a*a*a*a*a*a` against a long name backtracks for minutes; a FIFO blocks."""
    (vault / ".tsmignore").write_text("daily/\n" + "*a" * 8 + "\n")
    (vault / "notes" / ("a" * 200 + "b.md")).write_text("# Long\n\nlongname\n")
    data = index(tsm)
    assert any(".tsmignore:2: not used" in w for w in data["warnings"]), data["warnings"]
    assert not any(p.startswith("daily/") for p in listed(tsm))  # line 1 still applies
    assert found(tsm, "longname") == ["notes/" + "a" * 200 + "b.md"]
    (vault / ".tsmignore").unlink()
    os.mkfifo(vault / ".tsmignore")
    index(tsm)  # reading the FIFO would block for ever


def test_a_nul_byte_on_files_from_stdin_is_a_user_error(vault: Path, tsm: Any) -> None:
    """`find -print0` piped in by mistake: one line, exit 1, not an unexpected ValueError."""
    result = tsm(
        "index", "--no-embed", "-f", "json", "--files-from-stdin",
        input="notes/shell-setup.md\x00notes/other.md\n", cwd=vault, timeout=60,
    )  # fmt: skip
    assert result.code == 1, result.err
    error = result.error()
    assert error["kind"] == "user_error" and "NUL" in error["error"], error


def test_folder_swapped_for_a_link_while_indexing_is_not_followed(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """A folder inside the root swapped for a link out of it while `tsm index` runs (a
    checkout, or a process beside it): a note the walk found there is opened from the root
    down with no link followed, never from the folder the link leads to (an open by the
    whole path followed it)."""
    inside, elsewhere = vault / "notes" / "sub", tmp_path / "x"
    for folder, word in ((inside, "harmless"), (elsewhere, SECRET)):
        folder.mkdir()
        for n in range(100):
            (folder / f"n{n}.md").write_text(f"# Note {n}\n\n{word} {n}\n", encoding="utf-8")
    with link_swapped(inside, elsewhere):
        for _ in range(10):  # each walk finds the folder real about half the time
            result = tsm("index", "-f", "json", "--no-embed", timeout=120)
            assert result.code == 0, result.err
    assert found(tsm, SECRET) == []
