"""A team store shared by two people with two index roots: real
PostgreSQL (scripts/postgres), the real CLI as subprocesses, one HOME per person.

- An index run removes only documents of its own workspace: Bob's first `tsm index` keeps
  Alice's note, and Alice's next one keeps Bob's; a path both roots hold is stored twice.
- Every member's search finds every member's notes; a transcript only its owner's, unless
  they share it (`sessions.share`), and turning sharing off hides it again.
- Two `tsm index` of two people at once lose nothing.
- A copied state dir naming another member's workspace is refused; a tsm.toml cannot say
  who you are; a database from before workspaces keeps its rows, adopted by their writer.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from isolation import isolated_environ

from tsm.sources.session_origin import project_folder_name

pytestmark = pytest.mark.postgres

SESSION_LINES = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s1",
        "timestamp": "2026-03-10T09:00:00.000Z",
        "isSidechain": False,
        "message": {"role": "user", "content": "How do I prepare my performance review?"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-03-10T09:00:05.000Z",
        "isSidechain": False,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "List what you shipped before the review."}],
        },
    },
]


@dataclass
class Person:
    """One member of the team: a HOME, an index root, a member name, one store URL."""

    name: str
    home: Path
    root: Path
    url: str
    extra: dict[str, str]

    def env(self) -> dict[str, str]:
        return {
            **isolated_environ(self.home),
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home / ".claude"),
            "TSM_INDEX_ROOT": str(self.root),
            "TSM_STORE_URL": self.url,
            "TSM_STORE_MEMBER": self.name,
            "TSM_EMBEDDER": "fake:384",
            **self.extra,
        }

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "tsm", *args, "-f", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.root,
            env=self.env(),
        )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.start(*args)
        out, err = proc.communicate(timeout=300)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def ok(self, *args: str) -> Any:
        done = self.run(*args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def found(self, query: str) -> list[str]:
        return [r["source"]["path"] for r in self.ok("search", query, "--fts-only")["results"]]

    def listed(self) -> list[str]:
        return [d["path"] for d in self.ok("list")]

    @property
    def session_key(self) -> str:
        """How the store names this person's transcript: in Claude Code's folder for the
        root, under their HOME (the only place ingest-session reads a transcript from)."""
        folder = project_folder_name(os.path.realpath(self.root))
        return f"~/.claude/projects/{folder}/{self.name}-session.jsonl"

    def transcript(self) -> Path:
        path = self.home / self.session_key.removeprefix("~/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(json.dumps(line) for line in SESSION_LINES) + "\n")
        return path


def note(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {path.stem}\n\n{text}\n")


def person(tmp_path: Path, name: str, url: str, **extra: str) -> Person:
    home, root = tmp_path / f"home-{name}", tmp_path / name
    home.mkdir()
    root.mkdir()
    return Person(name, home, root, url, dict(extra))


def stored_paths(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return sorted(r[0] for r in conn.execute("SELECT path FROM documents"))


def test_an_index_run_removes_only_its_own_workspace_and_keeps_transcripts_private(
    tmp_path: Path, pg_url: str
) -> None:
    alice, bob = person(tmp_path, "alice", pg_url), person(tmp_path, "bob", pg_url)
    note(alice.root, "notes/alice-only.md", "Alice plans the quarterly budget.")
    note(alice.root, "notes/todo.md", "Alice must renew the tracker licence.")
    note(bob.root, "notes/bob-only.md", "Bob drives the release train.")
    note(bob.root, "notes/todo.md", "Bob must water the office plants.")

    assert alice.ok("index")["indexed"] == 2
    assert alice.ok("ingest-session", str(alice.transcript()))["indexed"] == 1
    report = bob.ok("index")
    assert (report["indexed"], report["removed"]) == (2, 0)
    again = alice.ok("index")
    assert (again["removed"], again["unchanged"]) == (0, 2)
    assert stored_paths(pg_url) == [
        "notes/alice-only.md",
        "notes/bob-only.md",
        "notes/todo.md",
        "notes/todo.md",
        alice.session_key,
    ]
    # the team sees each other's notes, both todo.md among them, with their own text
    assert bob.found("budget") == ["notes/alice-only.md"]
    assert alice.found("release train") == ["notes/bob-only.md"]
    assert sorted(bob.found("licence plants")) == ["notes/todo.md", "notes/todo.md"]
    assert "water the office plants" in bob.ok("get", "notes/todo.md")["text"]
    assert "renew the tracker licence" in alice.ok("get", "notes/todo.md")["text"]
    # the transcript is Alice's alone: not in Bob's search, list, get or tags
    alice_session = alice.session_key
    assert alice.found("performance review") == [alice_session]
    assert bob.found("performance review") == []
    assert alice_session not in bob.listed()
    refused = bob.run("get", alice_session)
    assert refused.returncode == 1, refused.stdout
    assert "no indexed document" in json.loads(refused.stderr)["error"]


def test_a_shared_transcript_is_seen_until_its_owner_stops_sharing(
    tmp_path: Path, pg_url: str
) -> None:
    alice = person(tmp_path, "alice", pg_url, TSM_SESSIONS_SHARE="1")
    bob = person(tmp_path, "bob", pg_url)
    note(bob.root, "notes/bob-only.md", "Bob drives the release train.")
    alice.ok("ingest-session", str(alice.transcript()))
    bob.ok("index")
    session = alice.session_key
    assert bob.found("performance review") == [session]
    assert session in bob.listed()

    alice.extra["TSM_SESSIONS_SHARE"] = "0"
    alice.ok("status")  # any command of hers brings her transcripts to her setting
    assert bob.found("performance review") == []
    assert session not in bob.listed()
    assert alice.found("performance review") == [session]


def test_two_people_indexing_at_once_lose_nothing(tmp_path: Path, pg_url: str) -> None:
    alice, bob = person(tmp_path, "alice", pg_url), person(tmp_path, "bob", pg_url)
    for who in (alice, bob):
        for i in range(60):
            note(who.root, f"notes/n{i:03d}.md", f"{who.name} note {i} about topic {i % 7}.")
            note(who.root, f"{who.name}/own{i:03d}.md", f"only {who.name} wrote {i}.")
    alice.ok("status")  # the schema exists before both start
    procs = [alice.start("index", "--no-embed"), bob.start("index", "--no-embed")]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert (proc.returncode, err) == (0, ""), err
        assert json.loads(out)["removed"] == 0
    want = sorted([f"notes/n{i:03d}.md" for i in range(60)] * 2) + sorted(
        [f"{n}/own{i:03d}.md" for n in ("alice", "bob") for i in range(60)]
    )
    assert stored_paths(pg_url) == sorted(want)
    with psycopg.connect(pg_url) as conn:
        per_owner = dict(conn.execute("SELECT owner, count(*) FROM documents GROUP BY owner"))
    assert per_owner == {"alice": 120, "bob": 120}
    for who in (alice, bob):  # and a second run of each finds all of its own unchanged
        report = who.ok("index", "--no-embed")
        assert (report["unchanged"], report["removed"], report["indexed"]) == (120, 0, 0)


def test_a_copied_state_dir_cannot_act_for_another_member(tmp_path: Path, pg_url: str) -> None:
    alice, bob = person(tmp_path, "alice", pg_url), person(tmp_path, "bob", pg_url)
    note(bob.root, "notes/bob-only.md", "Bob drives the release train.")
    bob.ok("index")
    # a repository Alice clones ships Bob's .tsm/workspace-id
    (alice.root / ".tsm").mkdir()
    shutil.copy(bob.root / ".tsm" / "workspace-id", alice.root / ".tsm" / "workspace-id")
    refused = alice.run("index")
    assert refused.returncode == 1, refused.stderr
    error = json.loads(refused.stderr)
    assert error["kind"] == "user_error"
    assert "belongs to another member" in error["error"]
    assert stored_paths(pg_url) == ["notes/bob-only.md"]


def test_a_project_file_cannot_say_who_you_are(tmp_path: Path, pg_url: str) -> None:
    alice = person(tmp_path, "alice", pg_url)
    (alice.root / "tsm.toml").write_text('[store]\nmember = "bob"\n')
    refused = alice.run("status")
    assert refused.returncode == 1
    assert "store.member is personal" in json.loads(refused.stderr)["error"]


def test_a_store_from_before_workspaces_keeps_its_rows_until_their_writer_adopts_them(
    tmp_path: Path, pg_url: str
) -> None:
    """Rows of schema 5 have no workspace: an index run adopts those at its paths and leaves
    the others; their transcripts are hidden until their owner writes them again."""
    from tsm.store import migrations
    from tsm.store.postgres import connection as postgres

    old = postgres.connect(pg_url)
    migrations.apply(old, up_to=5)
    for path, doc_type in (
        ("notes/kept.md", "markdown"),
        ("notes/elsewhere.md", "markdown"),
        ("~/old-session.jsonl", "session"),
    ):
        old.execute(
            """INSERT INTO documents(path, type, title, content_hash, size, mtime, category,
                   text, indexed_at) VALUES (?, ?, 'old', 'x', 1, 0, 'notes', 'old text', 0)""",
            (path, doc_type),
        )
    old.close()
    alice = person(tmp_path, "alice", pg_url)
    note(alice.root, "notes/kept.md", "Alice still has this one.")
    report = alice.ok("index")
    assert (report["indexed"], report["removed"]) == (1, 0)
    with psycopg.connect(pg_url) as conn:
        rows = sorted(conn.execute("SELECT path, owner, text FROM documents").fetchall())
    assert rows[0] == ("notes/elsewhere.md", "", "old text")  # another root's: kept
    assert rows[1][:2] == ("notes/kept.md", "alice") and "still has" in rows[1][2]
    assert rows[2] == ("~/old-session.jsonl", "", "old text")
    assert len(rows) == 3
    assert "~/old-session.jsonl" not in alice.listed()


def test_each_root_keeps_one_workspace_id(tmp_path: Path, pg_url: str) -> None:
    alice = person(tmp_path, "alice", pg_url)
    note(alice.root, "a.md", "one")
    alice.ok("index")
    first = (alice.root / ".tsm" / "workspace-id").read_text()
    moved = tmp_path / "moved"
    os.rename(alice.root, moved)
    alice.root = moved
    report = alice.ok("index")  # the same workspace after a move: nothing written again
    assert (report["unchanged"], report["indexed"], report["removed"]) == (1, 0, 0)
    assert (moved / ".tsm" / "workspace-id").read_text() == first


def test_a_team_mcp_server_will_not_serve_its_members_private_transcripts(
    tmp_path: Path, pg_url: str
) -> None:
    """`tsm mcp --http` reads as the member who runs it, for clients who are other people."""
    alice = person(tmp_path, "alice", pg_url)
    alice.ok("ingest-session", str(alice.transcript()))
    with socket.socket() as probe:  # a free port, should it serve
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", str(port), "--no-warmup"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=alice.root,
        env=alice.env(),
    )
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("tsm mcp --http served Alice's private transcript")
    assert proc.returncode == 1, err
    assert "1 unshared transcripts of member 'alice'" in err


def test_export_and_import_replace_keep_to_their_workspace(tmp_path: Path, pg_url: str) -> None:
    """Bob's export holds neither Alice's notes nor her transcript, and his
    `import --replace` replaces his own documents, not the team's."""
    alice, bob = person(tmp_path, "alice", pg_url), person(tmp_path, "bob", pg_url)
    note(alice.root, "notes/alice-only.md", "Alice plans the quarterly budget.")
    note(bob.root, "notes/bob-only.md", "Bob drives the release train.")
    alice.ok("index")
    alice.ok("ingest-session", str(alice.transcript()))
    bob.ok("index")
    exported = bob.ok("export", str(tmp_path / "bob.tsm.gz"))
    assert exported["documents"] == 1
    imported = bob.ok("import", str(tmp_path / "bob.tsm.gz"), "--replace")
    assert imported["documents"] == 1
    assert stored_paths(pg_url) == [
        "notes/alice-only.md",
        "notes/bob-only.md",
        alice.session_key,
    ]
    assert bob.found("budget") == ["notes/alice-only.md"]


def test_a_member_who_only_reads_writes_nothing_into_the_root(tmp_path: Path, pg_url: str) -> None:
    """The workspace id is made by a root's first write, not by a search or a status."""
    alice, carol = person(tmp_path, "alice", pg_url), person(tmp_path, "carol", pg_url)
    note(alice.root, "notes/alice-only.md", "Alice plans the quarterly budget.")
    alice.ok("index")
    assert carol.found("budget") == ["notes/alice-only.md"]
    carol.ok("status")
    assert not (carol.root / ".tsm" / "workspace-id").exists()
    assert (alice.root / ".tsm" / "workspace-id").is_file()


def test_a_member_searches_through_a_role_that_may_only_read(tmp_path: Path, pg_url: str) -> None:
    """An agent's server may hold a role with SELECT alone: opening the store from a root its
    member indexes with another role writes nothing, so searching works."""
    alice = person(tmp_path, "alice", pg_url)
    note(alice.root, "notes/budget.md", "Alice plans the quarterly budget.")
    alice.ok("index")
    role = f"reader_{os.getpid()}"
    parts = urlsplit(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'only-reads'")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        reader = replace(
            alice,
            url=urlunsplit(
                parts._replace(netloc=f"{role}:only-reads@{parts.netloc.split('@')[-1]}")
            ),
        )
        assert reader.found("budget") == ["notes/budget.md"]
        assert alice.found("budget") == ["notes/budget.md"]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_a_reindex_rebuilds_only_its_own_workspace(tmp_path: Path, pg_url: str) -> None:
    """Bob's `tsm reindex` rewrites his keyword rows and forgets his vectors only: Alice's
    rows are not touched (same row versions), nor is a vector both their notes use."""
    alice, bob = person(tmp_path, "alice", pg_url), person(tmp_path, "bob", pg_url)
    note(alice.root, "notes/alice-only.md", "Alice plans the quarterly budget.")
    note(alice.root, "notes/shared.md", "The team meets on Mondays.")
    note(bob.root, "notes/bob-only.md", "Bob drives the release train.")
    note(bob.root, "notes/shared.md", "The team meets on Mondays.")
    alice.ok("index")
    bob.ok("index")

    def versions(owner: str) -> dict[str, set[str]]:
        """The row versions (xmin) of `owner`'s keyword rows and of the vectors its chunks use."""
        with psycopg.connect(pg_url) as conn:
            workspace = f"(SELECT d.workspace FROM documents d WHERE d.owner = '{owner}' LIMIT 1)"
            of_chunks = f"""FROM chunks c JOIN documents d ON d.id = c.document_id
                            WHERE d.workspace = {workspace}"""
            return {
                "keywords": {
                    str(r[0])
                    for r in conn.execute(
                        f"SELECT k.xmin FROM chunk_keywords k WHERE k.chunk_id IN "
                        f"(SELECT c.id {of_chunks})"
                    )
                },
                "vectors": {
                    f"{r[0]}:{r[1]}"
                    for r in conn.execute(
                        f"SELECT e.embed_hash, e.xmin FROM embeddings e WHERE e.embed_hash IN "
                        f"(SELECT c.embed_hash {of_chunks})"
                    )
                },
            }

    alice_before, bob_before = versions("alice"), versions("bob")
    assert len(alice_before["vectors"]) == 2 and len(bob_before["vectors"]) == 2
    report = bob.ok("reindex", "all")
    assert report["fts_documents"] == 2, report
    assert report["vectors_dropped"] == 1, report  # bob-only.md's; shared.md's is Alice's too
    assert versions("alice") == alice_before
    bob_after = versions("bob")
    assert bob_after["keywords"].isdisjoint(bob_before["keywords"])  # rewritten
    assert len(bob_after["vectors"]) == 2  # embedded again
    assert bob.found("budget") == ["notes/alice-only.md"]
    assert alice.found("release train") == ["notes/bob-only.md"]
