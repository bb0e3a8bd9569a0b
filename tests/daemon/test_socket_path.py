"""A root so deep that <state dir>/tsmd.sock passes the 108 bytes of a UNIX socket address:
the daemon's socket goes to the user's runtime folder under a hash of the state dir, which
must be a 0700 folder of the user's own."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from daemon_harness import Harness, wait_for

from tsm.socketpath import MAX_SOCKET_PATH, socket_path


@pytest.fixture
def deep(harness: Harness) -> Harness:
    """The harness's vault moved 130 bytes deeper; its runtime folder inside the harness."""
    deep_root = harness.dir / ("d" * 60) / ("e" * 60) / "vault"
    deep_root.parent.mkdir(parents=True)
    harness.root.rename(deep_root)
    harness.root, harness.state = deep_root, deep_root / ".tsm"
    runtime = harness.dir / "run"
    runtime.mkdir(mode=0o700)
    harness.env |= {"TSM_INDEX_ROOT": str(deep_root), "XDG_RUNTIME_DIR": str(runtime)}
    assert len(os.fsencode(harness.state / "tsmd.sock")) > 108
    return harness


def daemon_section(h: Harness) -> dict:
    return dict(h.status()["daemon"])


def test_a_search_in_a_deep_root_starts_a_daemon_that_answers(deep: Harness) -> None:
    first = deep.cli("search", "install git", "-f", "json", env={"TSM_AUTOSTART": "1"})
    assert first.code == 0, first.err
    assert first.json()["results"][0]["source"]["path"] == "notes/git-install.md"
    daemon = wait_for(
        lambda: (d := daemon_section(deep))["state"] == "running" and d, 60, "the daemon"
    )
    sock = Path(daemon["socket"])
    assert sock.parent == deep.dir / "run" / "tsm"
    assert len(os.fsencode(sock)) <= MAX_SOCKET_PATH
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    deep.socket = sock  # the harness's raw requests and teardown
    before = daemon["searches"]
    again = deep.cli("search", "install git", "-f", "json")  # the thin client finds it
    assert again.code == 0, again.err
    assert daemon_section(deep)["searches"] > before
    stopped = deep.cli("stop", "-f", "json", timeout=60)
    assert stopped.code == 0 and stopped.json()["stopped"] is True, stopped.err
    assert not sock.exists()


@pytest.mark.parametrize("squat", ["open to others", "a symlink"])
def test_a_runtime_folder_not_our_own_is_refused(deep: Harness, squat: str) -> None:
    folder = deep.dir / "run" / "tsm"
    if squat == "open to others":
        folder.mkdir()
        folder.chmod(0o777)
    else:  # pointing at a folder that holds a file of the socket's name
        elsewhere = deep.dir / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        folder.symlink_to(elsewhere)
        bait = elsewhere / Path(socket_path(str(deep.state), deep.env)).name
        bait.write_text("not tsm's")
    start = deep.cli("start", "-f", "json", timeout=60)
    assert start.code == 2, start.err
    error = start.error()
    assert str(folder) in error["error"] and "Traceback" not in start.err, error
    # a search still answers, in-process, and starts no daemon on the way
    search = deep.cli("search", "install git", "-f", "json", env={"TSM_AUTOSTART": "1"})
    assert search.code == 0, search.err
    assert not (deep.state / "logs" / "tsmd.stderr.log").exists()
    assert daemon_section(deep)["state"] in ("stopped", "stale")
    stop = deep.cli("stop", "-f", "json", timeout=60)  # a "stale" socket is not removed there
    assert stop.code == 0, stop.err
    if squat == "a symlink":
        assert bait.read_text() == "not tsm's"
