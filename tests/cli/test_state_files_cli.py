"""Files the CLI writes: the state dir is 0700 and ours, the DB
and its companions 0600, and a symlink, hard link or foreign dir planted where tsm writes
is refused with one clear line (exit 2) instead of written through.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import Tsm

NO_MODEL = {"TSM_EMBEDDER": "none"}
root_only = pytest.mark.skipif(os.getuid() != 0, reason="needs root to chown to another uid")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def index(tsm: Tsm, *args: str):  # noqa: ANN201 - CliResult
    return tsm("index", "-f", "json", *args, env=NO_MODEL)


def test_index_creates_a_private_state_dir_and_db(vault: Path, tsm: Tsm) -> None:
    assert index(tsm).code == 0
    state = vault / ".tsm"
    assert mode(state) == 0o700
    assert {p.name: mode(p) for p in state.iterdir() if p.is_file()} == {"tsm.db": 0o600}


def test_the_state_of_an_older_tsm_is_tightened(vault: Path, tsm: Tsm) -> None:
    assert index(tsm).code == 0
    state = vault / ".tsm"
    db = state / "tsm.db"
    wal = state / "tsm.db-wal"
    wal.write_bytes(b"")
    state.chmod(0o755)
    db.chmod(0o644)
    wal.chmod(0o644)
    assert tsm("status", "-f", "json", env=NO_MODEL).code == 0
    assert (mode(state), mode(db)) == (0o700, 0o600)
    assert not wal.exists() or mode(wal) == 0o600


def test_init_writes_state_files_0600_and_leaves_the_root_files_alone(
    vault: Path, tsm: Tsm
) -> None:
    result = tsm("init", "-f", "json", env=NO_MODEL)
    assert result.code == 0, result.err
    assert mode(vault / ".tsm") == 0o700
    assert mode(vault / ".tsm" / "synonyms.csv") == 0o600
    assert mode(vault / "tsm.toml") == 0o666 & ~current_umask()


def current_umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the vault that must never change (say ~/.bashrc)."""
    path = tmp_path / "elsewhere" / "victim.txt"
    path.parent.mkdir()
    path.write_text("untouched\n")
    return path


def assert_refused(result, victim: Path, *words: str) -> None:  # noqa: ANN001
    assert result.code == 2, result.err
    error = result.error()
    assert error["kind"] == "system_error"
    for word in words:
        assert word in error["error"]
    assert "Traceback" not in result.err
    assert victim.read_text() == "untouched\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


def test_a_symlinked_state_dir_is_refused(vault: Path, tsm: Tsm, victim: Path) -> None:
    (vault / ".tsm").symlink_to(victim.parent)
    assert_refused(index(tsm), victim, "symlink")


@pytest.mark.parametrize("name", ["tsm.db", "tsm.db-wal", "tsm.db-shm", "tsm.db-journal"])
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_db_file_is_refused(
    vault: Path, tsm: Tsm, victim: Path, name: str, dangling: bool
) -> None:
    if name != "tsm.db":
        assert index(tsm).code == 0
    state = vault / ".tsm"
    state.mkdir(exist_ok=True)
    (state / name).symlink_to(victim.parent / "new.db" if dangling else victim)
    assert_refused(index(tsm), victim, "symlink", name)


def test_a_hard_linked_db_is_refused(vault: Path, tsm: Tsm, tmp_path: Path) -> None:
    assert index(tsm).code == 0
    outside = tmp_path / "outside.db"
    os.link(vault / ".tsm" / "tsm.db", outside)
    result = index(tsm)
    assert result.code == 2 and "hard link" in result.error()["error"]


@root_only
def test_a_state_dir_of_another_user_is_refused(vault: Path, tsm: Tsm) -> None:
    assert index(tsm).code == 0
    os.chown(vault / ".tsm", 65534, 65534)
    result = index(tsm)
    assert result.code == 2 and "uid 65534" in result.error()["error"]


def test_a_shared_sticky_folder_is_refused_not_closed(
    vault: Path, tsm: Tsm, tmp_path: Path
) -> None:
    """TSM_STATE_DIR=/tmp must not chmod /tmp to 0700, even for root who owns it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    result = tsm("index", "-f", "json", env={**NO_MODEL, "TSM_STATE_DIR": str(shared)})
    assert result.code == 2 and "shared folder" in result.error()["error"]
    assert mode(shared) == 0o1777


def test_the_rebuild_backup_is_private(vault: Path, tsm: Tsm) -> None:
    assert index(tsm).code == 0
    (vault / ".tsm" / "tsm.db").chmod(0o644)  # as an older tsm left it
    result = tsm("rebuild", "--apply", "-f", "json", env=NO_MODEL)
    assert result.code == 0, result.err
    backup = Path(result.json()["backup"])
    assert backup.parent == vault / ".tsm" and mode(backup) == 0o600


def test_a_link_planted_under_the_backup_name_is_refused(
    vault: Path, tsm: Tsm, victim: Path
) -> None:
    assert index(tsm).code == 0
    now = dt.datetime.now()
    for seconds in range(0, 30):  # the backup is named by the second it starts
        stamp = (now + dt.timedelta(seconds=seconds)).strftime("%Y%m%d-%H%M%S")
        (vault / ".tsm" / f"tsm.db.bak-{stamp}").symlink_to(victim)
    result = tsm("rebuild", "--apply", "-f", "json", env=NO_MODEL)
    assert "Traceback" not in result.err
    if result.code == 0:  # a fresh name beside the links, never through one
        backup = Path(result.json()["backup"])
        assert not backup.is_symlink() and mode(backup) == 0o600
    else:
        assert result.code == 2 and result.error()["kind"] == "system_error"
    assert victim.read_text() == "untouched\n"


def test_the_mcp_server_never_logs_through_a_planted_link(
    vault: Path, tsm: Tsm, victim: Path
) -> None:
    assert index(tsm).code == 0
    (vault / ".tsm" / "logs").mkdir()
    (vault / ".tsm" / "logs" / "mcp.log").symlink_to(victim)
    result = tsm("mcp", input="", env=NO_MODEL, timeout=120)  # stdin closed: serves, exits
    assert result.code == 0, result.err
    assert "symlink" in result.err and victim.read_text() == "untouched\n"
    assert mode(vault / ".tsm" / "logs") == 0o700


USER_DICT_ROW = (
    "宇宙記憶帳,4786,4786,5000,宇宙記憶帳,名詞,固有名詞,一般,*,*,*,"
    "ウチュウキオクチョウ,宇宙記憶帳,*,A,*,*,*,*\n"
)


def test_the_compiled_user_dictionary_is_private_and_never_built_through_a_link(
    vault: Path, tsm: Tsm, victim: Path
) -> None:
    state = vault / ".tsm"
    state.mkdir()
    (state / "user_dict.csv").write_text(USER_DICT_ROW, encoding="utf-8")
    (state / "user_dict.dic.tmp").symlink_to(victim)  # where the build writes first
    assert index(tsm).code == 0
    assert mode(state / "user_dict.dic") == 0o600 and not (state / "user_dict.dic.tmp").exists()
    assert victim.read_text() == "untouched\n"


def test_index_takes_file_names_that_look_like_options_after_dashdash(
    vault: Path, tsm: Tsm
) -> None:
    for name in ("-h.md", "--apply.md"):
        (vault / name).write_text(f"# {name}\n\nA note about xylophone tuning.\n")
    result = tsm("index", "-f", "json", "--", "-h.md", "--apply.md", cwd=vault, env=NO_MODEL)
    assert result.code == 0, result.err
    assert result.json()["indexed"] == 2
