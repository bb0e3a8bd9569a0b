"""A search the daemon answers for the thin client is dressed for the client's terminal: the
client forwards NO_COLOR, FORCE_COLOR, TERM and COLUMNS (cli/entry.py), and the links point
into the daemon's index root."""

from __future__ import annotations

import re

from daemon_harness import Harness

ESC = "\x1b"
OSC8 = re.compile(r"\x1b\]8;;([^\x1b]*)\x1b\\")


def served(h: Harness) -> int:
    return int(h.status()["daemon"]["searches"])


def test_the_clients_colour_choice_reaches_the_daemon(
    in_process: Harness, shared_daemon: Harness
) -> None:
    before = served(shared_daemon)
    forced = shared_daemon.cli("search", "install git", "-f", "human", env={"FORCE_COLOR": "1"})
    assert forced.code == 0, forced.err
    links = [u for u in OSC8.findall(forced.out) if u]
    assert links and all(u.startswith("file://") for u in links)
    assert any(f"{shared_daemon.root}/notes/git-install.md#" in u for u in links), links
    off = shared_daemon.cli(
        "search", "install git", "-f", "human", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}
    )
    assert off.code == 0 and ESC not in off.out
    assert served(shared_daemon) == before + 2  # both answered by the daemon
    # The same text as the CLI prints in-process, links aside (each harness has its root).
    local = in_process.cli("search", "install git", "-f", "human", env={"FORCE_COLOR": "1"})
    assert OSC8.sub("", local.out) == OSC8.sub("", forced.out)
