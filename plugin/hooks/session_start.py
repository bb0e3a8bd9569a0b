"""SessionStart hook: check, once per session, that the other hooks can run tsm here, and
tell the user in Claude Code when they cannot (a `systemMessage`, shown in the session)
instead of letting every prompt go by without notes and only a log line saying why.

Silent where the hooks do nothing anyway (an index root the user has not trusted), and
when tsm answers.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402 - the path above makes the hook runnable as a bare script
    HookFailure,
    HookInput,
    Workspace,
    escape_controls,
    input_cwd,
    log_failure,
    run_hook,
    run_tsm,
)

HOOK_NAME = "session_start"
# `tsm --version` is answered before any index or model is opened; a cold Python start of
# a large venv on a slow disk stays well inside this (hooks.json allows 15 s).
CHECK_TIMEOUT_SECONDS = 10.0
MESSAGE_PREFIX = "tsm plugin: "


def handle(data: HookInput, workspace: Workspace) -> str | None:
    """The hook's JSON line with a systemMessage when tsm cannot be run, else None."""
    if not workspace.configured:
        return None
    try:
        version = run_tsm(
            ["--version"],
            workspace=workspace,
            session_cwd=input_cwd(data),
            timeout=CHECK_TIMEOUT_SECONDS,
            environ=os.environ,
        )
    except HookFailure as failure:
        log_failure(workspace, HOOK_NAME, str(failure))
        return notice(
            f"{failure}. Until then your notes are not searched on prompts, edited notes are"
            " not re-indexed and this session is not remembered."
        )
    if not version.startswith("tsm "):
        return notice(f"the program run as tsm is not tsm (it printed {version[:80]!r})")
    return None


def notice(text: str) -> str:
    """A hook output that shows `text` to the user and changes nothing else."""
    message = MESSAGE_PREFIX + escape_controls(text)  # it quotes paths and tsm's stderr
    return json.dumps({"systemMessage": message}, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    run_hook(HOOK_NAME, handle)
