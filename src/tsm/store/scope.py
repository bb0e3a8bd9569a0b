"""Who writes and who reads in a team store: the workspace a root's documents belong to,
the member whose transcripts are private, and the SQL that keeps each to its own.

A team store (PostgreSQL) holds the documents of many roots and many people. Each document
records its `workspace` (the root that wrote it: an id kept in the root's state dir, or a
name the team gives in `store.workspace`) and its `owner` (the member who wrote it). An index
run sees, rewrites and removes only its own workspace's documents; every reader sees every
note, and a transcript only when it is its own or its owner shares it (`sessions.share`).
Rows written before the team scope (workspace '') are adopted by the first run that writes
their path. The SQLite store has no scope: one file, one root, one person.
"""

from __future__ import annotations

import getpass
import os
import re
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import statedir
from ..errors import ConfigError, UserError

if TYPE_CHECKING:
    from ..config import Settings

WORKSPACE_FILE = "workspace-id"
LEGACY = ""  # the workspace of rows written before m006: adopted by the first writer
_GENERATED = re.compile(r"[0-9a-f]{32}")
NAME_MAX = 200


@dataclass(frozen=True)
class Scope:
    """A connection's place in a team store: its workspace, member, and whether the
    member's transcripts are shared."""

    workspace: str | None  # None: this root has no id yet (made by its first write)
    member: str
    share: bool
    named: bool  # the workspace is a name from store.workspace, not a generated id
    state_dir: Path


def scope_of(conn: Any) -> Scope | None:
    """The scope of a team store's connection; None on SQLite (nothing to keep apart)."""
    return getattr(conn, "scope", None)


def for_settings(settings: Settings) -> Scope:
    """The scope `settings` give: store.member (else the login name), store.workspace (else
    the id kept in the state dir, None until the root's first write makes it: a command
    that only reads writes nothing into the root), sessions.share."""
    name = str(settings.get("store.workspace")).strip()
    if name:
        _check_name(name, "store.workspace")
    member = str(settings.get("store.member")).strip() or _login_name()
    _check_name(member, "store.member")
    return Scope(
        workspace=name or _read_id(settings.state_dir / WORKSPACE_FILE),
        member=member,
        share=bool(settings.get("sessions.share")),
        named=bool(name),
        state_dir=settings.state_dir,
    )


def _check_name(value: str, key: str) -> None:
    if len(value) > NAME_MAX or not value.isprintable():
        raise ConfigError(f"{key}: {value[:40]!r} is not a name (printable, {NAME_MAX} at most)")


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME (a bare container)
        return f"uid-{os.getuid()}"


def workspace_id(state_dir: Path) -> str:
    """The root's workspace id, kept in `<state dir>/workspace-id`: made once (random, 128
    bits), so it stays when the root moves and two roots never share one. Two processes
    making it at once agree: the file is linked into place only if none is there yet."""
    path = state_dir / WORKSPACE_FILE
    found = _read_id(path)
    if found:
        return found
    statedir.private_dir(state_dir)
    tmp = state_dir / f".{WORKSPACE_FILE}.{secrets.token_hex(8)}"
    statedir.write_private(tmp, (secrets.token_hex(16) + "\n").encode())
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process made it first: use theirs
    finally:
        tmp.unlink(missing_ok=True)
    found = _read_id(path)
    if not found:
        raise ConfigError(f"{path} does not hold a workspace id", f"remove {path}; tsm makes one")
    return found


def _read_id(path: Path) -> str | None:
    data = statedir.read_state_file(path, cap=1024)
    if data is None:
        return None
    text = data.decode("ascii", "replace").strip()
    if not _GENERATED.fullmatch(text):
        raise ConfigError(f"{path} does not hold a workspace id", f"remove {path}; tsm makes one")
    return text


def visible(conn: Any, alias: str = "d") -> tuple[str, list[object]]:
    """A WHERE clause over documents `alias` that lets through what this connection's member
    may see: every note, and transcripts of their own or shared. ("1 = 1", []) on SQLite."""
    scope = scope_of(conn)
    if scope is None:
        return "1 = 1", []
    return (
        f"({alias}.type <> 'session' OR {alias}.owner = ? OR {alias}.shared)",
        [scope.member],
    )


def hides_any(conn: Any) -> bool:
    """Whether the store holds a transcript this member may not see (a cheap look through
    the partial index of private transcripts): a search without one needs no filter."""
    scope = scope_of(conn)
    if scope is None:
        return False
    row = conn.execute(
        "SELECT 1 FROM documents WHERE type = 'session' AND NOT shared AND owner <> ? LIMIT 1",
        (scope.member,),
    ).fetchone()
    return row is not None


def own(conn: Any, alias: str = "") -> tuple[str, list[object]]:
    """A WHERE clause over documents that keeps this connection's workspace: what an index
    run looks at, rewrites and removes. ("1 = 1", []) on SQLite."""
    scope = scope_of(conn)
    if scope is None:
        return "1 = 1", []
    if scope.workspace is None:
        return "1 = 0", []  # this root has written nothing yet
    prefix = f"{alias}." if alias else ""
    return f"{prefix}workspace = ?", [scope.workspace]


def written_here(conn: Any) -> tuple[str, list[object]]:
    """An SQL truth value over documents: written from this root (its workspace, or from
    before workspaces, when every writer was this root as far as anyone knew)."""
    scope = scope_of(conn)
    if scope is None:
        return "1 = 1", []
    return "(workspace IN (?, ?))", [scope.workspace or LEGACY, LEGACY]


def in_own_workspace(conn: Any, alias: str) -> tuple[str, list[object]]:
    """An SQL truth value over documents `alias`: this workspace wrote it (own_first's test,
    for a caller that picks among rows itself). ("1 = 1", []) on SQLite."""
    scope = scope_of(conn)
    if scope is None:
        return "1 = 1", []
    return f"({alias}.workspace = ?)", [scope.workspace or LEGACY]


def own_first(conn: Any, alias: str = "") -> tuple[str, list[object]]:
    """An ORDER BY that puts this workspace's document first, when several workspaces of a
    team store hold one path; ("", []) on SQLite, where a path is unique."""
    scope = scope_of(conn)
    if scope is None:
        return "", []
    prefix = f"{alias}." if alias else ""
    return f" ORDER BY ({prefix}workspace = ?) DESC, {prefix}id", [scope.workspace or LEGACY]


class WorkspaceTaken(ConfigError):
    """The root's workspace id belongs to another member of the team store."""


def writing(conn: Any) -> Scope | None:
    """The scope a write records, its workspace made first if this is the root's first write
    (the id file, then the claim); None on SQLite."""
    scope = scope_of(conn)
    if scope is None or scope.workspace is not None:
        return scope
    scope = replace(scope, workspace=workspace_id(scope.state_dir))
    claim(conn, scope)
    conn.scope = scope
    return scope


def claim(conn: Any, scope: Scope) -> None:
    """Record the workspace as this member's (a generated id belongs to the member who first
    wrote with it; a name is the team's), refuse an id that another member holds (a cloned
    repository's `.tsm/workspace-id`, say), and bring the member's transcripts in this
    workspace to their sessions.share setting (turning it off hides those shared before).
    Nothing to do for a root with no id yet. It writes only what is missing or differs, so
    a member who reads through a role that may only read (an agent's server, say) opens
    the store from a root they index with another role."""
    if scope.workspace is None:
        return
    owner = "SELECT member, named FROM workspaces WHERE id = ?"
    row = conn.execute(owner, (scope.workspace,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO workspaces(id, member, named) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (scope.workspace, scope.member, scope.named),
        )
        row = conn.execute(owner, (scope.workspace,)).fetchone()
    member, named = row
    if named != scope.named or (not named and member != scope.member):
        raise WorkspaceTaken(
            f"this root's team store workspace {_shown(scope)} belongs to another member",
            "a copied state dir brought its workspace-id: remove it there and tsm makes one"
            if not scope.named
            else "store.workspace names a workspace that is an id; choose another name",
        )
    differs = """WHERE workspace = ? AND owner = ? AND type = 'session' AND shared <> ?"""
    params = (scope.workspace, scope.member, scope.share)
    (stale,) = conn.execute(f"SELECT EXISTS (SELECT 1 FROM documents {differs})", params).fetchone()
    if stale:
        conn.execute(f"UPDATE documents SET shared = ? {differs}", (scope.share, *params))


def _shown(scope: Scope) -> str:
    return repr(scope.workspace) if scope.named else f"(id {str(scope.workspace)[:8]}…)"


def refuse_serving_private(conn: Any, what: str) -> None:
    """A server for other people (`tsm mcp --http`) reads as the member who runs it, so it
    would show every client that member's unshared transcripts: refuse while there are any."""
    scope = scope_of(conn)
    if scope is None:
        return
    (count,) = conn.execute(
        "SELECT count(*) FROM documents WHERE type = 'session' AND NOT shared AND owner = ?",
        (scope.member,),
    ).fetchone()
    if count:
        raise UserError(
            f"{what} would show every client the {count} unshared transcripts of member "
            f"{scope.member!r} in the team store",
            "run it as a member of its own (TSM_STORE_MEMBER=team-server, say), in its own root",
        )
