"""The `tsm context` command line, shared by the CLI and the daemon answering a command line
the thin client forwarded (cli/entry.py): its flags, and the request it makes of the hook's
JSON on stdin (or of --prompt) and the TSM_INJECT_* environment."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    from ..core.context import ContextRequest

# The hook input is a prompt and a few paths; anything far larger is not Claude Code's.
MAX_INPUT_BYTES = 8 * 1024 * 1024


def add_context_command(sub: Any, parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The `context` subcommand and its flags, on a subparsers object."""
    p: argparse.ArgumentParser = sub.add_parser(
        "context",
        parents=[parent],
        help="what the prompt hook injects for a prompt, and why",
        description="Read the JSON Claude Code sends the UserPromptSubmit hook on stdin (or "
        "take --prompt), search for the prompt and print the hook's output: the "
        "<knowledge_search> XML as additionalContext, or nothing when nothing is about the "
        "prompt. TSM_INJECT_TOP_K, TSM_INJECT_MIN_SCORE, TSM_INJECT_MIN_RELEVANCE, "
        "TSM_INJECT_MIN_COVERAGE, TSM_INJECT_MIN_DROP and TSM_SNIPPET_BUDGET tune it.",
    )
    p.add_argument("--prompt", help="the prompt (instead of the hook's JSON on stdin)")
    p.add_argument(
        "--explain",
        action="store_true",
        help="show the decision instead: each hit, injected or withheld, and why",
    )
    return p


def context_request(
    args: argparse.Namespace, stdin: bytes | None, environ: Mapping[str, str]
) -> ContextRequest:
    """The request of a parsed `tsm context` command line; `stdin`: the bytes it was given."""
    # Here, not at the top: every command's parser registers `context`, and only it needs this.
    from ..core.context import ContextRequest, Policy
    from ..core.request import clock

    policy, now = Policy.from_environ(environ), clock(environ)
    if args.prompt is not None:
        return ContextRequest(args.prompt, policy, now)
    if stdin is None:
        raise UserError(
            "no hook input", "pipe the hook's JSON on stdin, or give the prompt with --prompt"
        )
    if len(stdin) > MAX_INPUT_BYTES:
        raise UserError(f"the hook input is larger than {MAX_INPUT_BYTES} bytes")
    try:
        data = json.loads(stdin.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(f"the hook input is not UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"the hook input is not JSON: {exc}") from None
    return ContextRequest.from_hook_input(data, policy, now)
