"""Stop hook: ingest the session transcript (`transcript_path`) so past conversations become
searchable. It fires after every reply; tsm skips a transcript whose content is unchanged,
and refuses one that is not the user's own transcript of this index root (a refusal that
holds for every caller of `tsm ingest-session`, so the hook passes on what it was given).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402 - the path above makes the hook runnable as a bare script
    HookInput,
    Workspace,
    input_cwd,
    input_string,
    run_hook,
    run_tsm,
)

HOOK_NAME = "stop"
# The hook runs async (hooks/hooks.json), so this bounds a stuck tsm, not the user's wait.
INGEST_TIMEOUT_SECONDS = 120.0


def ingest_command(transcript: Path) -> list[str]:
    """The `tsm ingest-session` arguments for one transcript file, after `--` so that no
    file name can pass for an option."""
    return ["ingest-session", "-f", "json", "--", str(transcript)]


def handle(data: HookInput, workspace: Workspace) -> None:
    """Ingest the transcript if it exists; a session without one has nothing to keep."""
    if not workspace.configured:
        return None
    transcript = Path(os.path.expanduser(input_string(data, "transcript_path")))
    if not transcript.is_absolute():
        transcript = input_cwd(data) / transcript
    if not transcript.is_file():
        return None
    run_tsm(
        ingest_command(transcript),
        workspace=workspace,
        session_cwd=input_cwd(data),
        timeout=INGEST_TIMEOUT_SECONDS,
        environ=os.environ,
    )
    return None


if __name__ == "__main__":
    run_hook(HOOK_NAME, handle)
