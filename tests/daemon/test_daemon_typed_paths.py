"""A search the thin client forwards to the daemon reads its --path from the client's
working directory, as the in-process CLI does (the daemon's own is elsewhere)."""

from __future__ import annotations

import json
import subprocess
import sys

from daemon_harness import Harness


def searches(h: Harness) -> int:
    return int(h.status()["daemon"]["searches"])


def test_a_forwarded_path_is_read_from_the_clients_folder(daemon: Harness) -> None:
    before = searches(daemon)
    done = subprocess.run(
        [sys.executable, "-m", "tsm", "search", "LoRa", "--path", "lora-modules.md", "-f", "json"],
        capture_output=True,
        text=True,
        cwd=daemon.root / "research",
        env=daemon.env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert searches(daemon) == before + 1  # the daemon answered it
    found = [r["source"]["path"] for r in json.loads(done.stdout)["results"]]
    assert found == ["research/lora-modules.md"]
