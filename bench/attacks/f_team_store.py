"""Attacks on a team store (PostgreSQL): one person's index run or repository acting on
another person's documents, or a transcript reaching a member it was not shared with
(SECURITY.md "Team store: workspaces and people"). One server for the module, started with
scripts/postgres as the benches do and stopped at exit; each attack gets a new database.
Without a server (psycopg or pgserver missing, a start that fails) each attack is skipped
with that reason, and counts as defended: there is no team store to attack."""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from . import REPO, Lab, Outcome

SCRIPT = REPO / "scripts" / "postgres"
SESSION = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s1",
        "timestamp": "2026-03-10T09:00:00.000Z",
        "isSidechain": False,
        "message": {"role": "user", "content": "Draft my performance review for my manager"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s1",
        "timestamp": "2026-03-10T09:00:05.000Z",
        "isSidechain": False,
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Here it is."}]},
    },
]


@cache
def _server() -> str | None:
    """The URL of the module's server, or None (and _why says why) when it cannot start."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _why.append("psycopg is not installed")
        return None
    folder = Path(tempfile.mkdtemp(prefix="tsm-attack-pg-"))
    proc = subprocess.run(
        [str(SCRIPT), "start", str(folder), "--no-fsync"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        _why.append(f"scripts/postgres could not start: {proc.stderr.strip()[:160]}")
        shutil.rmtree(folder, ignore_errors=True)
        return None

    def stop() -> None:
        subprocess.run([str(SCRIPT), "stop", str(folder)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    return proc.stdout.strip()


_why: list[str] = []
_made = [0]


def _database() -> str | None:
    import psycopg

    url = _server()
    if url is None:
        return None
    _made[0] += 1
    name = f"attack_team_{_made[0]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


class _Member:
    """A person of the team: their own HOME and index root in the lab, one store URL. tsm
    runs in the root and finds it itself (a TSM_INDEX_ROOT of the user's would trust it)."""

    def __init__(self, lab: Lab, name: str, url: str) -> None:
        self.lab, self.name, self.url = lab, name, url
        self.home = lab.base / f"home-{name}"
        self.root = self.home / "notes"
        self.root.mkdir(parents=True, exist_ok=True)

    def tsm(self, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "tsm", *args, "-f", "json"],
            cwd=self.root,
            env=self.lab.environ(
                HOME=str(self.home),
                XDG_CONFIG_HOME=str(self.home / ".config"),
                TSM_STORE_URL=self.url,
                TSM_STORE_MEMBER=self.name,
                TSM_EMBEDDER="fake:384",
                **env,
            ),
            capture_output=True,
            timeout=180,
        )

    def found(self, query: str) -> list[str]:
        out = self.tsm("search", query, "--fts-only")
        return [r["source"]["path"] for r in json.loads(out.stdout)["results"]]

    def note(self, rel: str, text: str) -> None:
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_text(f"# {Path(rel).stem}\n\n{text}\n")

    @property
    def session_key(self) -> str:
        """The transcript's name in the store: in Claude Code's folder for this member's root
        (the only place ingest-session takes a transcript from), under their HOME."""
        folder = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(self.root))
        return f"~/.claude/projects/{folder}/review.jsonl"

    def transcript(self) -> Path:
        path = self.home / self.session_key.removeprefix("~/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in SESSION))
        return path


def _team(lab: Lab) -> tuple[_Member, _Member] | Outcome:
    url = _database()
    if url is None:
        return Outcome(True, f"skipped: no PostgreSQL server ({'; '.join(_why)})")
    return _Member(lab, "alice", url), _Member(lab, "bob", url)


def _stored(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return sorted(r[0] for r in conn.execute("SELECT path FROM documents"))


def another_root_removes_my_notes(lab: Lab) -> Outcome:
    """Bob's `tsm index` of his root on the team store removes Alice's notes (vanished here)."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, bob = team
    alice.note("notes/alice-only.md", "Alice's plan for the quarterly budget.")
    alice.note("todo.md", "Alice renews the licence.")
    bob.note("todo.md", "Bob waters the plants.")
    alice.tsm("index")
    removed = [json.loads(m.tsm("index").stdout)["removed"] for m in (bob, alice)]
    stored = _stored(alice.url)
    kept = stored == ["notes/alice-only.md", "todo.md", "todo.md"]
    return Outcome(kept and removed == [0, 0], f"removed {removed}; the store holds {stored}")


def teammate_reads_my_transcript(lab: Lab) -> Outcome:
    """Bob's search and `get` on the team store show Alice's unshared conversation."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, bob = team
    key = alice.session_key
    alice.tsm("ingest-session", str(alice.transcript()))
    bob.note("n.md", "Bob's note.")
    bob.tsm("index")
    seen = bob.found("performance review")
    got = bob.tsm("get", key)
    own = alice.found("performance review")
    ok = seen == [] and got.returncode == 1 and own == [key]
    return Outcome(ok, f"Bob's search {seen}, get exit {got.returncode}; Alice's search {own}")


def cloned_workspace_id(lab: Lab) -> Outcome:
    """A repository Alice clones ships Bob's .tsm/workspace-id: her index run would remove his
    notes as vanished."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, bob = team
    bob.note("bob-only.md", "Bob's release train.")
    bob.tsm("index")
    (alice.root / ".tsm").mkdir()
    shutil.copy(bob.root / ".tsm" / "workspace-id", alice.root / ".tsm" / "workspace-id")
    run = alice.tsm("index")
    stored = _stored(alice.url)
    ok = run.returncode == 1 and stored == ["bob-only.md"]
    return Outcome(ok, f"exit {run.returncode}: {run.stderr.decode().strip()[:90]}; {stored}")


def project_file_names_a_member(lab: Lab) -> Outcome:
    """A repository's tsm.toml says `[store] member = "bob"`: Alice would see Bob's transcripts."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, bob = team
    bob.tsm("ingest-session", str(bob.transcript()))
    (alice.root / "tsm.toml").write_text('[store]\nmember = "bob"\n')
    run = alice.tsm("search", "performance review", "--fts-only")
    ok = run.returncode == 1 and b"personal" in run.stderr
    return Outcome(ok, f"exit {run.returncode}: {run.stderr.decode().strip()[:100]}")


def untrusted_project_file_shares_transcripts(lab: Lab) -> Outcome:
    """An untrusted repository's tsm.toml sets `[sessions] share = true`: Alice's transcript
    ingested there would be shown to the team."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, bob = team
    (alice.root / "tsm.toml").write_text("[sessions]\nshare = true\n")
    alice.tsm("ingest-session", str(alice.transcript()))
    bob.note("n.md", "Bob's note.")
    bob.tsm("index")
    seen = bob.found("performance review")
    return Outcome(seen == [], f"Bob's search for her conversation: {seen}")


def untrusted_project_file_joins_a_workspace(lab: Lab) -> Outcome:
    """An untrusted repository's tsm.toml names the workspace Bob's clones use: Alice's index
    run there would remove Bob's notes."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, bob = team
    bob.note("handbook.md", "The team handbook.")
    bob.tsm("index", TSM_STORE_WORKSPACE="handbook")
    (alice.root / "tsm.toml").write_text('[store]\nworkspace = "handbook"\n')
    alice.note("other.md", "Something else.")
    report = json.loads(alice.tsm("index").stdout)
    stored = _stored(alice.url)
    ok = report["removed"] == 0 and stored == ["handbook.md", "other.md"]
    return Outcome(ok, f"removed {report['removed']}; the store holds {stored}")


def team_server_shows_my_transcripts(lab: Lab) -> Outcome:
    """Alice runs the team's `tsm mcp --http`: every client would search her transcripts."""
    team = _team(lab)
    if isinstance(team, Outcome):
        return team
    alice, _ = team
    alice.tsm("ingest-session", str(alice.transcript()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsm", "mcp", "--http", "--port", "18765", "--no-warmup"],
        cwd=alice.root,
        env=alice.lab.environ(
            HOME=str(alice.home), TSM_STORE_URL=alice.url, TSM_STORE_MEMBER=alice.name
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Outcome(False, "the server started and served as Alice")
    return Outcome(proc.returncode == 1, f"exit {proc.returncode}: {err.decode().strip()[:90]}")


ATTACKS = [
    another_root_removes_my_notes,
    teammate_reads_my_transcript,
    cloned_workspace_id,
    project_file_names_a_member,
    untrusted_project_file_shares_transcripts,
    untrusted_project_file_joins_a_workspace,
    team_server_shows_my_transcripts,
]
