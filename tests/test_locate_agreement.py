"""tsm and the plugin's hooks agree on where an index is and whether the user trusts it:
one table of cases run through tsm's settings loader and
the hooks' find_workspace, and the hooks' copies of locate.py and of the readers' suffixes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tsm import config
from tsm.sources import READERS

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / "plugin" / "hooks"
sys.path.insert(0, str(HOOKS))

from _common import find_workspace  # noqa: E402
from post_tool_use import INDEXABLE_SUFFIXES  # noqa: E402


def test_the_hooks_carry_an_exact_copy_of_locate() -> None:
    assert (HOOKS / "_locate.py").read_bytes() == (REPO / "src/tsm/locate.py").read_bytes(), (
        "copy src/tsm/locate.py to plugin/hooks/_locate.py"
    )


def test_the_hooks_reindex_exactly_what_tsm_reads() -> None:
    assert set(INDEXABLE_SUFFIXES) == set(READERS)


# Each case: the folders and files to make (a trailing / is a folder), the working directory,
# the environment ({home} and {base} are filled in), and what both must answer: index root,
# state dir, trusted. "trust" lines are written to the user's trust file.
CASES = {
    "nothing anywhere: the working directory": dict(
        make=["proj/sub/"],
        cwd="proj/sub",
        env={},
        root="proj/sub",
        state="proj/sub/.tsm",
        trusted=False,
    ),
    "the nearest tsm.toml wins": dict(
        make=["v/tsm.toml", "v/inner/tsm.toml", "v/inner/deep/"],
        cwd="v/inner/deep",
        env={},
        root="v/inner",
        state="v/inner/.tsm",
        trusted=False,
    ),
    "a .tsm state dir in a parent folder": dict(
        make=["v/.tsm/", "v/notes/2026/"],
        cwd="v/notes/2026",
        env={},
        root="v",
        state="v/.tsm",
        trusted=False,
    ),
    "a nearer tsm.toml beats a .tsm further up": dict(
        make=["v/.tsm/", "v/p/tsm.toml", "v/p/x/"],
        cwd="v/p/x",
        env={},
        root="v/p",
        state="v/p/.tsm",
        trusted=False,
    ),
    "a nearer .tsm beats a tsm.toml further up": dict(
        make=["v/tsm.toml", "v/p/.tsm/", "v/p/x/"],
        cwd="v/p/x",
        env={},
        root="v/p",
        state="v/p/.tsm",
        trusted=False,
    ),
    "a file named .tsm is no marker": dict(
        make=["v/tsm.toml", "v/p/.tsm", "v/p/x/"],
        cwd="v/p/x",
        env={},
        root="v",
        state="v/.tsm",
        trusted=False,
    ),
    "absolute TSM_INDEX_ROOT: the user's own choice": dict(
        make=["notes/", "elsewhere/tsm.toml"],
        cwd="elsewhere",
        env={"TSM_INDEX_ROOT": "{base}/notes"},
        root="notes",
        state="notes/.tsm",
        trusted=True,
    ),
    "TSM_INDEX_ROOT=~/notes is under HOME": dict(
        make=["home/notes/", "proj/"],
        cwd="proj",
        env={"TSM_INDEX_ROOT": "~/notes"},
        root="home/notes",
        state="home/notes/.tsm",
        trusted=True,
    ),
    "a relative TSM_INDEX_ROOT is taken from the working directory, and not trusted": dict(
        make=["proj/docs/"],
        cwd="proj",
        env={"TSM_INDEX_ROOT": "docs"},
        root="proj/docs",
        state="proj/docs/.tsm",
        trusted=False,
    ),
    "TSM_INDEX_ROOT=. is wherever one is": dict(
        make=["proj/"],
        cwd="proj",
        env={"TSM_INDEX_ROOT": "."},
        root="proj",
        state="proj/.tsm",
        trusted=False,
    ),
    "absolute TSM_STATE_DIR": dict(
        make=["v/tsm.toml", "v/a/"],
        cwd="v/a",
        env={"TSM_STATE_DIR": "{base}/state"},
        root="v",
        state="state",
        trusted=False,
    ),
    "a relative TSM_STATE_DIR is taken from the index root, not the working directory": dict(
        make=["v/tsm.toml", "v/a/b/"],
        cwd="v/a/b",
        env={"TSM_STATE_DIR": "cache/tsm"},
        root="v",
        state="v/cache/tsm",
        trusted=False,
    ),
    "TSM_STATE_DIR=~/state is under HOME": dict(
        make=["v/tsm.toml"],
        cwd="v",
        env={"TSM_STATE_DIR": "~/state"},
        root="v",
        state="home/state",
        trusted=False,
    ),
    "a root in the trust file": dict(
        make=["v/tsm.toml", "v/notes/"],
        cwd="v/notes",
        env={},
        trust=["v"],
        root="v",
        state="v/.tsm",
        trusted=True,
    ),
    "trust is per root: a nested tsm.toml under a trusted root is not trusted": dict(
        make=["v/tsm.toml", "v/clone/tsm.toml"],
        cwd="v/clone",
        env={},
        trust=["v"],
        root="v/clone",
        state="v/clone/.tsm",
        trusted=False,
    ),
    "a trusted root reached through a symlink": dict(
        make=["v/tsm.toml", "link->v"],
        cwd="link",
        env={},
        trust=["v"],
        root="v",
        state="v/.tsm",
        trusted=True,
    ),
    "a relative XDG_CONFIG_HOME is ignored, as the XDG spec says": dict(
        make=["v/tsm.toml"],
        cwd="v",
        env={"XDG_CONFIG_HOME": "xdg"},
        trust=["v"],
        root="v",
        state="v/.tsm",
        trusted=True,
    ),
}


def build(base: Path, case: dict) -> tuple[Path, dict[str, str]]:
    home = base / "home"
    home.mkdir()
    for entry in case["make"]:
        if "->" in entry:
            link, target = entry.split("->")
            (base / link).symlink_to(base / target)
        elif entry.endswith("/"):
            (base / entry).mkdir(parents=True, exist_ok=True)
        else:
            (base / entry).parent.mkdir(parents=True, exist_ok=True)
            (base / entry).write_text("")
    env = {"HOME": str(home)}
    env |= {k: v.format(base=base, home=home) for k, v in case["env"].items()}
    config_dir = (
        Path(env["XDG_CONFIG_HOME"]) / "tsm"
        if os.path.isabs(env.get("XDG_CONFIG_HOME", ""))
        else home / ".config" / "tsm"
    )
    if case.get("trust"):
        config_dir.mkdir(parents=True)
        (config_dir / "trusted-roots.txt").write_text(
            "# a comment\n\n" + "".join(f"{base / r}\n" for r in case["trust"])
        )
    return base / case["cwd"], env


@pytest.mark.parametrize("name", list(CASES))
def test_tsm_and_the_hooks_agree(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    base = tmp_path.resolve()
    cwd, env = build(base, case)
    settings = config.load(cwd, env)
    hook = find_workspace(cwd, env)
    expected = (base / case["root"], base / case["state"], case["trusted"])
    assert (settings.index_root, settings.state_dir, settings.trusted) == expected
    assert (hook.root, hook.state_dir, hook.configured) == expected
    assert settings.db_path == settings.state_dir / "tsm.db"


def test_a_relative_db_path_is_taken_from_the_index_root(tmp_path: Path) -> None:
    (tmp_path / "v" / "a").mkdir(parents=True)
    (tmp_path / "v" / "tsm.toml").write_text("")
    settings = config.load(tmp_path / "v" / "a", {"TSM_DB_PATH": "db/x.db", "HOME": str(tmp_path)})
    assert settings.db_path == tmp_path.resolve() / "v" / "db" / "x.db"
