"""UserPromptSubmit hook: hand Claude Code's input to `tsm context` and print what it answers,
the <knowledge_search> XML of prompt-format.md as additionalContext, or nothing.

What to search, which hits to inject and the XML are tsm's (`tsm context --explain` shows
the decision). The hook only finds the workspace and tsm, and never blocks the prompt: a
failure or a tsm that outlives the deadline is logged and nothing is printed.
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
    env_float,
    input_cwd,
    run_hook,
    run_tsm,
)

HOOK_NAME = "user_prompt_submit"
MIN_PROMPT_CHARS = 3
# Well inside the 10 s timeout of hooks/hooks.json, which also covers Python's start-up.
DEFAULT_TIMEOUT_SECONDS = 4.0


def should_skip(prompt: str) -> bool:
    """The contract's skip rule (CONTRACT.md), so that such a prompt starts no process: too
    short to search on, or system-generated (`<command-name>` …). tsm applies it too."""
    text = prompt.strip()
    shown = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return len(shown) < MIN_PROMPT_CHARS or text.startswith("<")


def handle(data: HookInput, workspace: Workspace) -> str | None:
    """The hook's JSON line as tsm answers it, or None to stay silent."""
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise HookFailure("hook input has no string 'prompt'")
    if should_skip(prompt) or not workspace.configured:
        return None
    environ = dict(os.environ)
    stdout = run_tsm(
        ["context"],
        workspace=workspace,
        session_cwd=input_cwd(data),
        timeout=_timeout(environ),
        environ=environ,
        stdin=json.dumps(data, ensure_ascii=False).encode("utf-8"),
    )
    return checked_output(stdout)


def checked_output(stdout: str) -> str | None:
    """tsm's answer if it is the hook output Claude Code expects; nothing else reaches the
    prompt (a stray line of a broken install must not become the model's context)."""
    if not stdout.strip():
        return None
    try:
        output = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise HookFailure(f"`tsm context` printed invalid JSON: {exc}") from None
    specific = output.get("hookSpecificOutput") if isinstance(output, dict) else None
    if not (
        isinstance(specific, dict)
        and specific.get("hookEventName") == "UserPromptSubmit"
        and isinstance(specific.get("additionalContext"), str)
    ):
        raise HookFailure("`tsm context` did not print a UserPromptSubmit hook output")
    return json.dumps(output, ensure_ascii=False) + "\n"


def _timeout(environ: dict[str, str]) -> float:
    seconds = env_float(environ, "TSM_HOOK_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)
    return seconds if seconds > 0 else DEFAULT_TIMEOUT_SECONDS


if __name__ == "__main__":
    run_hook(HOOK_NAME, handle)
