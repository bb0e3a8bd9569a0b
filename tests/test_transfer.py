"""`tsm export` and `tsm import` (core/transfer.py) through the real CLI: the sample vault's
index (real model) moved from SQLite to a real PostgreSQL and back searches and lists the
same, nothing lost on the way; a store that holds an index is refused without --replace;
hostile files (truncated, of another version, garbage, inconsistent) get one line, exit 1,
and leave the store as it was."""

from __future__ import annotations

import base64
import gzip
import json
import os
import resource
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

QUERIES = (
    ("install git",),  # hybrid: keywords and vectors
    ("狩猟", "--fts-only"),  # Japanese keywords alone
    ("LoRA radio range", "--vec-only"),  # vectors alone
)

SAMPLE_ON_SQLITE = "moves the SQLite sample index itself; PostgreSQL is its target here"


def sqlite_env(db: Path) -> dict[str, str]:
    """A second SQLite store for the same index root (the notes the documents came from)."""
    return {"TSM_STORE_URL": "", "TSM_DB_PATH": str(db)}


def searches(tsm: Any, env: dict[str, str]) -> list[Any]:
    """Each query's (path, score, fts, vector) rows and mode: ids differ between stores."""
    out = []
    for query, *flags in QUERIES:
        result = tsm("search", query, *flags, "-k", "8", "-f", "json", env=env)
        assert result.code == 0, result.err
        data = result.json()
        out.append(
            (
                query,
                data["mode"],
                data["total_matches"],
                [
                    (
                        r["source"]["path"],
                        r["score"],
                        r["score_breakdown"]["fts"],
                        r["score_breakdown"]["vector"],
                    )
                    for r in data["results"]
                ],
            )
        )
    assert any(rows for *_, rows in out)  # the queries find something
    return out


def same_searches(got: list[Any], want: list[Any]) -> None:
    assert [(q, mode, total) for q, mode, total, _ in got] == [
        (q, mode, total) for q, mode, total, _ in want
    ]
    for (query, _, _, rows), (_, _, _, expected) in zip(got, want, strict=True):
        assert [r[0] for r in rows] == [r[0] for r in expected], query
        for row, exp in zip(rows, expected, strict=True):
            for value, wanted in zip(row[1:], exp[1:], strict=True):
                assert (value is None) == (wanted is None), (query, row, exp)
                if value is not None:
                    assert value == pytest.approx(wanted, abs=1e-5), (query, row, exp)


def listing(tsm: Any, env: dict[str, str]) -> tuple[list[dict[str, Any]], list[Any]]:
    """`tsm list` without the ids (a new store gives new ones) and `tsm tags`."""
    docs = tsm("list", "-f", "json", env=env)
    tags = tsm("tags", "-f", "json", env=env)
    assert docs.code == 0 and tags.code == 0, docs.err + tags.err
    return [{k: v for k, v in d.items() if k != "id"} for d in docs.json()], tags.json()


def records(file: Path) -> list[dict[str, Any]]:
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_an_index_moves_from_sqlite_to_postgresql_and_back(
    indexed: Path, tsm: Any, pg_url: str, tmp_path: Path
) -> None:
    here: dict[str, str] = {}
    server = {"TSM_STORE_URL": pg_url}
    want_search, want_list = searches(tsm, here), listing(tsm, here)
    status = tsm("status", "-f", "json").json()

    exported = tsm("export", str(tmp_path / "index.tsm.gz"), "-f", "json")
    assert exported.code == 0, exported.err
    report = exported.json()
    assert report["store"] == "sqlite" and report["documents"] == status["total_documents"]
    assert report["chunks"] == status["total_chunks"] and report["vectors"] > 0
    assert stat.S_IMODE((tmp_path / "index.tsm.gz").stat().st_mode) == 0o600  # the notes' text

    imported = tsm("import", str(tmp_path / "index.tsm.gz"), "-f", "json", env=server)
    assert imported.code == 0, imported.err
    loaded = imported.json()
    assert loaded["store"] == "postgresql" and loaded["source_store"] == "sqlite"
    assert (loaded["documents"], loaded["chunks"], loaded["vectors"]) == (
        report["documents"],
        report["chunks"],
        report["vectors"],
    )
    assert loaded["keyword_rows"] == report["chunks"]  # rebuilt for PostgreSQL's index
    assert loaded["replaced_documents"] == 0

    # The same answers from the server: nothing re-embedded (vectors_done), same ranking.
    pg_status = tsm("status", "-f", "json", env=server).json()
    for key in ("total_documents", "total_chunks", "vectors_done", "model_name", "embedding_dim"):
        assert pg_status[key] == status[key], key
    assert pg_status["chunks_without_vectors"] == 0
    same_searches(searches(tsm, server), want_search)
    assert listing(tsm, server) == want_list

    # And back: PostgreSQL -> a new SQLite store, record for record the same file.
    back = tsm("export", str(tmp_path / "back.tsm.gz"), "-f", "json", env=server)
    assert back.code == 0, back.err
    assert back.json()["store"] == "postgresql"
    first, second = records(tmp_path / "index.tsm.gz"), records(tmp_path / "back.tsm.gz")
    assert first[0]["store"] == "sqlite" and second[0]["store"] == "postgresql"
    assert second[1:] == first[1:]  # documents, chunks, tags, links, names, meta, vectors

    again = sqlite_env(tmp_path / "again.db")
    result = tsm("import", str(tmp_path / "back.tsm.gz"), "-f", "json", env=again)
    assert result.code == 0, result.err
    assert result.json()["source_store"] == "postgresql"
    same_searches(searches(tsm, again), want_search)
    assert listing(tsm, again) == want_list


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_a_store_with_an_index_is_replaced_only_when_asked(
    indexed: Path, tsm: Any, tmp_path: Path
) -> None:
    file = tmp_path / "index.tsm.gz"
    assert tsm("export", str(file)).code == 0
    before = listing(tsm, {})

    refused = tsm("import", str(file), "-f", "json")
    assert refused.code == 1
    error = refused.error()
    assert error["kind"] == "user_error" and "already holds an index" in error["error"]
    assert "--replace" in error["error"]

    replaced = tsm("import", str(file), "--replace", "-f", "json")
    assert replaced.code == 0, replaced.err
    report = replaced.json()
    assert report["replaced_documents"] == report["documents"] == len(before[0])
    assert listing(tsm, {}) == before
    fts = tsm("search", "狩猟", "--fts-only", "-f", "json")
    assert fts.code == 0 and fts.json()["results"], fts.err  # keyword rows rebuilt
    doctor = tsm("doctor", "-f", "json").json()
    database = {c["name"]: c for c in doctor["sections"][0]["items"]}
    assert database["keywords"]["status"] == "ok" and database["orphans"]["status"] == "ok"


def _lines(file: Path) -> list[str]:
    with gzip.open(file, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def _gz(lines: list[str]) -> bytes:
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


def _edit(kind: str, change: Callable[[dict[str, Any]], None]) -> Callable[[list[str]], bytes]:
    """A file whose first record of `kind` is changed by `change`."""

    def make(lines: list[str]) -> bytes:
        out, done = [], False
        for line in lines:
            record = json.loads(line)
            if not done and record.get("kind") == kind:
                change(record)
                done = True
                line = json.dumps(record, ensure_ascii=False)
            out.append(line)
        return _gz(out)

    return make


def _header(**changes: Any) -> Callable[[list[str]], bytes]:
    def make(lines: list[str]) -> bytes:
        header = json.loads(lines[0]) | changes
        return _gz([json.dumps(header), *lines[1:]])

    return make


def _duplicate_document(lines: list[str]) -> bytes:
    first = next(i for i, line in enumerate(lines) if '"kind":"document"' in line)
    return _gz([*lines[:-1], lines[first], lines[-1]])


HOSTILE: dict[str, tuple[Callable[[list[str], bytes], bytes], str]] = {
    "truncated gzip": (lambda lines, raw: raw[: len(raw) * 2 // 3], "truncated or damaged"),
    "no end record": (lambda lines, raw: _gz(lines[:-1]), "truncated: it has no end record"),
    "cut mid-line": (
        lambda lines, raw: ("\n".join(lines)[: len("\n".join(lines)) // 2]).encode(),
        "line",
    ),
    "garbage": (lambda lines, raw: os.urandom(4000), "not a tsm export"),
    "text": (lambda lines, raw: b"hello\n" * 100, "not a tsm export"),
    "gzip of garbage": (lambda lines, raw: gzip.compress(os.urandom(4000)), "tsm export"),
    "empty": (lambda lines, raw: b"", "is empty"),
    "format version": (lambda lines, raw: _header(format_version=2)(lines), "format version 2"),
    "schema version": (lambda lines, raw: _header(schema_version=999)(lines), "schema version"),
    "wrong type": (
        lambda lines, raw: _edit("document", lambda r: r.update(size="big"))(lines),
        "'size' has a value of the wrong type",
    ),
    "missing field": (
        lambda lines, raw: _edit("document", lambda r: r.pop("text"))(lines),
        "without 'text'",
    ),
    "bad chunk": (
        lambda lines, raw: _edit("document", lambda r: r["chunks"].append({"text": 1}))(lines),
        "chunk",
    ),
    "bad vector": (
        lambda lines, raw: _edit(
            "vector", lambda r: r.update(vector=base64.b64encode(b"abc").decode())
        )(lines),
        "float32 values",
    ),
    "duplicate document": (lambda lines, raw: _duplicate_document(lines), "appears twice"),
    "counts disagree": (
        lambda lines, raw: _edit("end", lambda r: r.update(chunks=r["chunks"] + 1))(lines),
        "end record counts",
    ),
    "unknown record": (
        lambda lines, raw: _edit("meta", lambda r: r.update(kind="mystery"))(lines),
        "unknown record kind",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_a_hostile_file_is_refused_and_changes_nothing(
    indexed: Path, tsm: Any, tmp_path: Path, case: str
) -> None:
    good = tmp_path / "good.tsm.gz"
    assert tsm("export", str(good)).code == 0
    make, message = HOSTILE[case]
    bad = tmp_path / "bad.tsm.gz"
    bad.write_bytes(make(_lines(good), good.read_bytes()))
    listed = tsm("list", "-f", "json")
    assert listed.code == 0, listed.err
    before = listed.out

    # into the store that holds the index, asked to replace it: still as it was
    result = tsm("import", str(bad), "--replace", "-f", "json")
    assert result.code == 1, (result.out, result.err)
    error = result.error()
    assert error["kind"] == "user_error" and message in error["error"], error
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert tsm("list", "-f", "json").out == before

    # into a new store: none is left behind
    fresh = sqlite_env(tmp_path / "fresh.db")
    human = tsm("import", str(bad), env=fresh | {"TSM_DEBUG": ""}, input="")
    assert human.code == 1 and "Traceback" not in human.err
    assert not (tmp_path / "fresh.db").exists()


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_a_truncated_file_leaves_a_postgresql_store_as_it_was(
    indexed: Path, tsm: Any, pg_url: str, tmp_path: Path
) -> None:
    server = {"TSM_STORE_URL": pg_url}
    good = tmp_path / "good.tsm.gz"
    assert tsm("export", str(good)).code == 0
    assert tsm("import", str(good), env=server).code == 0
    before = listing(tsm, server)
    lines = _lines(good)
    (tmp_path / "cut.tsm.gz").write_bytes(_gz(lines[:-1]))  # every record but the end

    result = tsm("import", str(tmp_path / "cut.tsm.gz"), "--replace", "-f", "json", env=server)
    assert result.code == 1 and "no end record" in result.error()["error"]
    assert listing(tsm, server) == before
    assert tsm("status", "-f", "json", env=server).json()["vectors_done"] > 0


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_export_errors_are_one_line(indexed: Path, tsm: Any, tmp_path: Path) -> None:
    result = tsm("export", str(tmp_path / "no" / "such" / "dir" / "x.gz"), "-f", "json")
    assert result.code == 1 and "cannot write" in result.error()["error"]
    assert "Traceback" not in result.err
    assert list(tmp_path.glob("**/*.tmp")) == []
    nothing = tsm("export", str(tmp_path / "x.gz"), env=sqlite_env(tmp_path / "none.db"))
    assert nothing.code == 1 and "no index" in nothing.err


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_an_export_without_room_is_a_system_error_and_leaves_no_file(
    indexed: Path, tsm: Any, tmp_path: Path
) -> None:
    # a note of incompressible words, so that half the export is more than SQLite's own
    # files need to grow by (its -shm is 32 KB)
    words = " ".join(os.urandom(6).hex() for _ in range(40_000))
    (indexed / "notes" / "random.txt").write_text(words, encoding="utf-8")
    assert tsm("index", "--no-embed", "-f", "json").code == 0
    good = tmp_path / "good.tsm.gz"
    assert tsm("export", str(good)).code == 0
    size = good.stat().st_size
    assert size > 200_000
    target = tmp_path / "out" / "index.tsm.gz"
    target.parent.mkdir()

    def limit_files() -> None:  # as on a disk with only that much room (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, size // 2))

    proc = subprocess.run(
        [sys.executable, "-m", "tsm", "export", str(target), "-f", "json"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        preexec_fn=limit_files,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stderr)
    assert error["kind"] == "system_error" and f"cannot write {target}" in error["error"]
    assert list(target.parent.iterdir()) == []  # neither the file nor its temporary


@pytest.mark.sqlite_only(SAMPLE_ON_SQLITE)
def test_a_gzip_bomb_is_refused_without_filling_the_memory(
    vault: Path, tsm: Any, tmp_path: Path
) -> None:
    """A record one MiB over the record limit (128 Mi characters: one line of 'a', some
    hundreds of KB compressed) after a valid header: refused at the limit, never read whole,
    and no empty store left behind."""
    from tsm.core.transfer import MAX_RECORD_CHARS

    bomb = tmp_path / "bomb.tsm.gz"
    header = {"format": "tsm-export", "format_version": 1, "schema_version": 1}
    with gzip.open(bomb, "wb", compresslevel=1) as out:
        out.write((json.dumps(header) + "\n").encode())
        block = b"a" * 2**20
        for _ in range(MAX_RECORD_CHARS // len(block) + 1):
            out.write(block)
    result = tsm("import", str(bomb), "-f", "json")
    assert result.code == 1, result.err
    assert "longer than" in result.error()["error"]
    assert not (vault / ".tsm" / "tsm.db").exists()
