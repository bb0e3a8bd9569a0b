"""What the prompt hook injects on a vault of technical documentation: the issue's noise cases
through the real hook script, the real CLI and the real embedding model.

The vault mimics the one of the report: documentation pages that share words with everyday
coding requests, and one page stored twice under two names (README.md and index.md).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_harness import HookRun, ask_hook, index_vault, needs_tsm, trust

pytestmark = needs_tsm

REDACTION = """\
# Redaction

Pino can remove or mask sensitive fields before a log line is written.
Pass `redact` with the paths to hide, for example `['req.headers.authorization',
'user.password']`; each matching value is replaced with `[Redacted]`. Set
`redact.remove: true` to drop the keys instead of masking them. Paths use dot and
bracket notation, and `*` matches any key at one level (`'users[*].password'`).
"""

NOTES = {
    "docs/README.md": REDACTION,
    "docs/index.md": REDACTION,
    "reference/git.md": """\
# Git

Set `git config --global pull.rebase true` so that `git pull` rebases the local branch on
the remote one instead of merging. `git rebase -i origin/main` reorders, drops or squashes
commits before the branch is merged. A branch that was pushed and then rebased needs
`git push --force`, which is acceptable for a topic branch but not for main.
""",
    "CLAUDE.md": """\
# Project notes

## Testing

Tests live in `tests/` and run with `pytest -q`. Write a unit test for every new function;
parse and format functions such as date parsing get table-driven tests with dates at month
and year boundaries. Fixtures that need a database use the temporary SQLite file.
""",
    "reference/shell-loops.md": """\
# Loops in shell scripts

`break` leaves the loop; `continue` skips the rest of the body and continues with the next
iteration. Both take a count: `continue 2` continues the enclosing loop.
""",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_vault(tmp_path_factory.mktemp("docs-vault"), NOTES)


@pytest.fixture(autouse=True)
def trusted(vault: Path) -> None:
    trust(vault)


def injected(run: HookRun) -> list[ET.Element]:
    """The results Claude Code would receive; none when the hook stayed silent."""
    if not run.stdout:
        return []
    xml = run.output()["hookSpecificOutput"]["additionalContext"]
    return ET.fromstring(xml).findall("result")


def paths(run: HookRun) -> list[str]:
    return [r.findtext("source") or "" for r in injected(run)]


def test_the_same_text_under_two_paths_is_injected_once(vault: Path) -> None:
    prompt = "how do I mask the password field in pino logs with redact?"
    results = injected(ask_hook(vault, prompt))
    shown = [r.findtext("source") for r in results]
    copies = {"docs/README.md", "docs/index.md"}
    assert len(copies & set(shown)) == 1, shown
    first = next(r for r in results if r.findtext("source") in copies)
    (other,) = copies - {first.findtext("source")}
    assert other in (first.findtext("related") or "")


@pytest.mark.parametrize(
    "prompt",
    [
        # the report's examples; the second holds 61 % of the Testing section's words
        "git rebase の途中でコンフリクトした、どうすればいい？",
        "write a unit test for the parse_date function",
        "continue",  # one word, which a note holds: full keyword coverage
    ],
)
def test_an_everyday_request_that_shares_words_with_a_note_injects_nothing(
    vault: Path, prompt: str
) -> None:
    assert paths(ask_hook(vault, prompt)) == []


def test_a_question_about_a_note_still_gets_it(vault: Path) -> None:
    shown = paths(ask_hook(vault, "what does `continue 2` do in a shell loop?"))
    assert shown[:1] == ["reference/shell-loops.md"], shown
