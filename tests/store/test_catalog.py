"""The catalog (store/catalog.py): list, tags, info, get, status and the lookup of a document,
read from a real index of real files built by the indexing pipeline with FakeEmbedder."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsm
from tsm.config import Settings, load
from tsm.embed.fake import FakeEmbedder
from tsm.errors import DocumentNotFound
from tsm.indexing import index_paths
from tsm.render.json_format import dumps
from tsm.store import catalog
from tsm.store.connect import open_db

NOTES = {
    "notes/git.md": """---
title: Installing Git
tags: [git, setup]
aliases: [git-howto]
status: current
created: 2025-11-02
---
# Installing Git

## On Debian

Run apt install git. See [[shell]].

## From source

Build it with make.
""",
    "notes/deep/shell.md": """---
tags: [setup, shell]
---
# Shell setup

Put aliases in ~/.bashrc and read [the git note](../git.md).
""",
    "reading.txt": "A plain list of books to read.\n",
}

# The keys of each public JSON object, in order (docs/skill-interface.md and the outputs of
# `tsm list/tags/info/get/status -f json` as first published).
LIST_KEYS = [
    "id", "title", "type", "tags", "chunk_count", "created_at",
    "path", "category", "status", "date",
]  # fmt: skip
INFO_KEYS = [
    "id", "path", "type", "title", "category", "status", "created", "updated", "date",
    "date_source", "aliases", "tags", "size", "content_hash", "indexed_at", "chunk_count",
    "sections", "links",
]  # fmt: skip
STATUS_KEYS = [
    "documents", "total_documents", "total_chunks", "db_size_bytes", "model_name",
    "embedding_dim", "schema_version", "chunks_without_vectors", "vectors_done",
    "vectors_total", "embed_rate", "embed_rate_at", "configured_model", "vectors_stale",
    "index_root", "db_path", "trusted", "warnings",
    # additive: which store holds the index
    "store", "store_url", "server_version", "pgvector_version",
]  # fmt: skip


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, Path]]:
    """Three notes indexed once for the module (the tests only read)."""
    base = tmp_path_factory.mktemp("catalog")
    root = base / "vault"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    environ = {
        "TSM_INDEX_ROOT": str(root),
        "TSM_EMBEDDER": "fake",
        "TSM_NO_USER_CONFIG": "1",
        "HOME": str(base),
    }
    settings = load(root, environ)
    conn = open_db(settings.db_path, create=True)
    report = index_paths(settings, conn, embedder=FakeEmbedder())
    conn.close()
    assert report.indexed == len(NOTES), report
    yield settings, root


@pytest.fixture
def conn(index: tuple[Settings, Path]) -> Iterator[sqlite3.Connection]:
    c = open_db(index[0].db_path)
    yield c
    c.close()


@pytest.fixture
def root(index: tuple[Settings, Path]) -> Path:
    return index[1]


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_list_documents_gives_the_list_json_by_path(conn: sqlite3.Connection) -> None:
    docs = catalog.list_documents(conn)
    assert [d.path for d in docs] == ["notes/deep/shell.md", "notes/git.md", "reading.txt"]
    git = docs[1].as_json()
    assert list(git) == LIST_KEYS
    assert git["title"] == "Installing Git"
    assert git["type"] == "markdown"
    assert git["tags"] == ["git", "setup"]
    assert git["chunk_count"] == 2  # two sections
    assert git["category"] == "notes"
    assert git["status"] == "current"
    assert git["date"] == "2025-11-02"
    assert git["created_at"].endswith("+00:00")
    assert docs[2].tags == ()  # a text file has none
    # asdict and as_json write the same JSON; as_json's lists are what the human table joins
    assert dumped(dataclasses.asdict(docs[1])) == dumped(git)


def test_list_documents_of_one_type(conn: sqlite3.Connection) -> None:
    assert [d.path for d in catalog.list_documents(conn, "text")] == ["reading.txt"]
    assert catalog.list_documents(conn, "pdf") == []


def test_tag_counts_most_used_first_then_by_name(conn: sqlite3.Connection) -> None:
    tags = catalog.tag_counts(conn)
    assert [(t.name, t.count) for t in tags] == [("setup", 2), ("git", 1), ("shell", 1)]
    assert dumped(tags[0].as_json()) == '{"name": "setup", "count": 2}'


def test_find_document_by_id_and_by_path(conn: sqlite3.Connection, root: Path) -> None:
    by_path = catalog.find_document(conn, "notes/git.md", index_root=root, cwd=root)
    assert isinstance(by_path, catalog.StoredDocument)
    assert by_path.title == "Installing Git"
    assert by_path.aliases == ("git-howto",)
    assert by_path.text == NOTES["notes/git.md"]
    by_id = catalog.find_document(conn, str(by_path.id), index_root=root, cwd=root)
    assert by_id == by_path
    dotted = catalog.find_document(conn, "./notes/git.md", index_root=root, cwd=root)
    assert dotted == by_path


def test_find_document_from_a_subdirectory(conn: sqlite3.Connection, root: Path) -> None:
    """A path as the user types it in a folder below the root (`tsm get shell.md`)."""
    here = root / "notes" / "deep"
    doc = catalog.find_document(conn, "shell.md", index_root=root, cwd=here)
    assert doc.path == "notes/deep/shell.md"
    up = catalog.find_document(conn, "../git.md", index_root=root, cwd=here)
    assert up.path == "notes/git.md"
    absolute = catalog.find_document(
        conn, str(root / "reading.txt"), index_root=root, cwd=root.parent
    )
    assert absolute.path == "reading.txt"


def test_an_unknown_path_says_which_paths_are_close(conn: sqlite3.Connection, root: Path) -> None:
    with pytest.raises(DocumentNotFound) as caught:
        catalog.find_document(conn, "notes/gti.md", index_root=root, cwd=root)
    assert caught.value.hint == "did you mean: notes/git.md"
    with pytest.raises(DocumentNotFound) as caught:
        catalog.find_document(conn, "nothing/like/it.pdf", index_root=root, cwd=root)
    assert caught.value.hint == "see `tsm list`"


@pytest.mark.parametrize(
    "ref",
    [
        str(2**63),  # one past SQLite's largest integer: binding it would raise OverflowError
        "9" * 30,
        "²",  # isdigit() but not an int
        "99999",  # a valid id nobody has
        "notes/\udcff.md",  # an undecodable file name, as os.listdir hands it over
    ],
)
def test_refs_that_are_no_document_are_not_found(
    conn: sqlite3.Connection, root: Path, ref: str
) -> None:
    with pytest.raises(DocumentNotFound):
        catalog.find_document(conn, ref, index_root=root, cwd=root)


def test_is_document_id_stops_at_64_bits() -> None:
    assert catalog.is_document_id(str(2**63 - 1))
    assert not catalog.is_document_id(str(2**63))
    assert not catalog.is_document_id("²")
    assert not catalog.is_document_id("-1")


def test_document_info_gives_the_info_json(conn: sqlite3.Connection, root: Path) -> None:
    info = catalog.document_info(conn, "notes/git.md", index_root=root, cwd=root)
    data = info.as_json()
    assert list(data) == INFO_KEYS
    assert data["aliases"] == ["git-howto"]
    assert data["tags"] == ["git", "setup"]
    assert data["created"] == "2025-11-02"
    assert data["date"] == "2025-11-02"
    assert data["date_source"] == "frontmatter:created"
    assert data["size"] == len(NOTES["notes/git.md"].encode())
    assert data["sections"] == ["Installing Git > On Debian", "Installing Git > From source"]
    assert data["links"] == [{"target": "shell", "link_type": "wikilink"}]
    assert data["chunk_count"] == 2
    assert data["indexed_at"].endswith("+00:00")
    assert dumped(dataclasses.asdict(info)) == dumped(data)


def test_document_text_is_the_info_then_the_text(conn: sqlite3.Connection, root: Path) -> None:
    here = root / "notes" / "deep"
    text = catalog.document_text(conn, "shell.md", index_root=root, cwd=here)
    info = catalog.document_info(conn, "shell.md", index_root=root, cwd=here)
    data = text.as_json()
    assert list(data) == [*INFO_KEYS, "text"]
    assert {k: v for k, v in data.items() if k != "text"} == info.as_json()
    assert data["text"] == NOTES["notes/deep/shell.md"]
    assert data["links"] == [{"target": "../git.md", "link_type": "markdown"}]
    assert data["created"] is None
    assert data["date_source"] == "mtime"
    assert data["date"] == catalog.list_documents(conn)[0].date  # the file's mtime day


@pytest.mark.sqlite_only("compares the CLI with rows this test reads from its own SQLite index")
def test_the_cli_prints_these_rows(
    tsm: Tsm, conn: sqlite3.Connection, index: tuple[Settings, Path]
) -> None:
    """`tsm list/tags/info/get/status -f json` print the catalog's rows as they are (the
    public JSON, byte for byte), from a folder below the root."""
    settings, root = index
    env = {"TSM_INDEX_ROOT": str(root), "TSM_EMBEDDER": "fake"}
    here = root / "notes" / "deep"

    def cli(*args: str) -> str:
        run = tsm(*args, "-f", "json", cwd=here, env=env)
        assert run.code == 0, run.err
        return run.out.rstrip("\n")

    def at(ref: str) -> dict[str, Any]:
        return {"index_root": root, "cwd": here, "ref": ref}

    assert cli("list") == dumps([d.as_json() for d in catalog.list_documents(conn)])
    assert cli("list", "--type", "text") == dumps(
        [d.as_json() for d in catalog.list_documents(conn, "text")]
    )
    assert cli("tags") == dumps([t.as_json() for t in catalog.tag_counts(conn)])
    assert cli("info", "../git.md") == dumps(
        catalog.document_info(conn, **at("../git.md")).as_json()
    )
    assert cli("get", "shell.md") == dumps(catalog.document_text(conn, **at("shell.md")).as_json())
    status = json.loads(cli("status"))
    expected = catalog.index_status(conn, settings, configured_vectors="fake-64").as_json()
    assert list(status)[: len(STATUS_KEYS)] == STATUS_KEYS
    del status["db_size_bytes"], expected["db_size_bytes"]  # the CLI's own connection adds a WAL
    assert {k: status[k] for k in expected} == expected


def test_index_status(conn: sqlite3.Connection, index: tuple[Settings, Path]) -> None:
    settings = index[0]
    status = catalog.index_status(conn, settings, configured_vectors="fake-64")
    data = status.as_json()
    assert list(data) == STATUS_KEYS
    assert data["documents"] == {"markdown": 2, "text": 1}
    assert data["total_documents"] == 3
    assert data["total_chunks"] == 4
    assert data["vectors_done"] == data["vectors_total"] == 4
    assert data["chunks_without_vectors"] == 0
    assert data["model_name"] == "fake-64"
    assert data["embedding_dim"] == 64
    assert data["configured_model"] == "fake"
    assert data["vectors_stale"] is False
    assert data["db_size_bytes"] == settings.db_path.stat().st_size + (
        os.stat(f"{settings.db_path}-wal").st_size
        if os.path.exists(f"{settings.db_path}-wal")
        else 0
    )
    assert data["index_root"] == str(settings.index_root)
    assert data["warnings"] == []
    assert dumped(dataclasses.asdict(status)) == dumped(data)


def test_status_says_when_vectors_come_from_another_model(
    conn: sqlite3.Connection, index: tuple[Settings, Path]
) -> None:
    settings = index[0]
    assert catalog.index_status(conn, settings, configured_vectors="other-model").vectors_stale
    # a model whose vector name cannot be known without loading it is never called stale
    assert not catalog.index_status(conn, settings, configured_vectors=None).vectors_stale
    off = dataclasses.replace(settings, values={**settings.values, "embedding.model": "none"})
    assert not catalog.index_status(conn, off, configured_vectors="other-model").vectors_stale


def test_status_extras_follow_the_index_keys(
    conn: sqlite3.Connection, index: tuple[Settings, Path]
) -> None:
    untrusted = dataclasses.replace(index[0], trusted=False, ignored=("embedding.model = 'x'",))
    status = catalog.index_status(conn, untrusted, configured_vectors=None)
    data = status.as_json({"daemon": {"state": "stopped"}, "queue": {"writer_jobs": 0}})
    assert list(data) == [*STATUS_KEYS, "daemon", "queue"]
    assert data["daemon"] == {"state": "stopped"}
    assert data["trusted"] is False
    assert data["warnings"] == [untrusted.trust_warning]
