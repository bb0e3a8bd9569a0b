"""`tsm context` through a warm daemon (the thin client forwards the command line and the
hook input it read from stdin) answers exactly what the in-process core answers."""

from __future__ import annotations

import json

import pytest
from daemon_harness import Harness

PROMPTS = ["why did we decide to store the index in SQLite?", "狩猟免許の更新", "fix my CSS grid"]


def served(h: Harness) -> int:
    return int(h.status()["daemon"]["searches"])


@pytest.mark.parametrize("prompt", PROMPTS)
def test_daemon_and_in_process_give_the_same_context(
    in_process: Harness, shared_daemon: Harness, prompt: str
) -> None:
    payload = json.dumps({"prompt": prompt, "cwd": str(shared_daemon.root)}, ensure_ascii=False)
    local = in_process.cli("context", input=payload)
    assert local.code == 0, local.err
    before = served(shared_daemon)
    remote = shared_daemon.cli("context", input=payload)
    assert remote.code == 0, remote.err
    assert served(shared_daemon) == before + 1  # the daemon answered, not a fallback
    assert remote.out == local.out
    local = in_process.cli("context", "--prompt", prompt, "--explain", "-f", "json")
    remote = shared_daemon.cli("context", "--prompt", prompt, "--explain", "-f", "json")
    assert remote.json()["hits"] == local.json()["hits"]
    assert served(shared_daemon) == before + 2


def test_bad_hook_input_is_the_same_user_error_through_the_daemon(shared_daemon: Harness) -> None:
    done = shared_daemon.cli("context", "-f", "json", input="[]")
    assert done.code == 1
    assert done.error() == {
        "error": "the hook input is a JSON list, not an object",
        "kind": "user_error",
    }


def test_the_full_cli_asks_the_daemons_context_op(
    in_process: Harness, shared_daemon: Harness
) -> None:
    """With TSM_DEBUG=1 the thin client forwards nothing: the full CLI's client calls the
    daemon's `context` op (client/remote.py), and the answer is the same."""
    prompt = PROMPTS[0]
    local = in_process.cli("context", "--prompt", prompt, "--explain", "-f", "json")
    before = served(shared_daemon)
    remote = shared_daemon.cli(
        "context", "--prompt", prompt, "--explain", "-f", "json", env={"TSM_DEBUG": "1"}
    )
    assert remote.code == 0, remote.err
    assert served(shared_daemon) == before + 1
    assert remote.json() == local.json()
