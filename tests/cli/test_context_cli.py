"""`tsm context`: the prompt hook's decision inside tsm, through the real CLI on the indexed
sample vault (real model), and the same core operation in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tsm.config import load
from tsm.core.context import ContextRequest, Policy
from tsm.core.knowledge import LocalKnowledge
from tsm.core.knowledge_xml import render_knowledge_search

ABOUT_THE_VAULT = "why did we decide to store the index in SQLite?"
UNRELATED = "convert this callback-based function to async/await"


def hook_input(prompt: str, cwd: Path) -> str:
    """What Claude Code sends the UserPromptSubmit hook."""
    return json.dumps(
        {
            "session_id": "s1",
            "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        },
        ensure_ascii=False,
    )


def test_the_hook_input_on_stdin_gives_the_hooks_output(indexed_read_only: Path, tsm: Any) -> None:
    done = tsm("context", input=hook_input(ABOUT_THE_VAULT, indexed_read_only))
    assert done.code == 0, done.err
    output = json.loads(done.out)
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "UserPromptSubmit"
    assert "<source type=" in specific["additionalContext"]
    assert "decisions/0001-use-sqlite.md" in specific["additionalContext"]
    assert done.out.endswith("}\n") and done.out.count("\n") == 1


def test_the_xml_is_the_spec_rendering_of_the_search_it_made(
    indexed_read_only: Path, tsm: Any
) -> None:
    """The XML of the injected hits is exactly the prompt-format rendering of the search's
    own JSON (the same search the hook made before: five hits, keyword fallback)."""
    explained = tsm("context", "--prompt", ABOUT_THE_VAULT, "--explain", "-f", "json")
    assert explained.code == 0, explained.err
    answer = explained.json()
    searched = tsm(
        "search", "-f", "json", "-k", "5", "--fallback", "fts-only", "-q", answer["query"]
    )
    assert searched.code == 0, searched.err
    search = searched.json()
    injected = {hit["path"] for hit in answer["hits"] if hit["injected"]}
    kept = [r for r in search["results"] if r["source"]["path"] in injected]
    assert kept, answer
    assert answer["additional_context"] == render_knowledge_search({**search, "results": kept})
    assert [h["rank"] for h in answer["hits"]] == list(range(1, len(search["results"]) + 1))
    assert all(isinstance(h["reason"], str) and h["reason"] for h in answer["hits"])


def test_an_unrelated_prompt_prints_nothing_and_explain_says_why(
    indexed_read_only: Path, tsm: Any
) -> None:
    done = tsm("context", input=hook_input(UNRELATED, indexed_read_only))
    assert (done.code, done.out) == (0, ""), done.err
    explained = tsm("context", "--prompt", UNRELATED, "--explain", "-f", "human")
    assert explained.code == 0, explained.err
    assert "0 of " in explained.out and "withheld" in explained.out
    assert "below the relevance floor" in explained.out


def test_a_skipped_prompt_prints_nothing(indexed_read_only: Path, tsm: Any) -> None:
    for prompt in ("ok", "<command-name>/clear</command-name>"):
        done = tsm("context", input=hook_input(prompt, indexed_read_only))
        assert (done.code, done.out) == (0, ""), done.err
    explained = tsm("context", "--prompt", "ok", "--explain", "-f", "json")
    assert explained.json()["skipped"] == "the prompt is shorter than 3 characters"


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("not json", "the hook input is not JSON"),
        ("[1]", "the hook input is a JSON list, not an object"),
        ('{"cwd": "/"}', "the hook input has no string 'prompt'"),
    ],
)
def test_bad_hook_input_is_a_one_line_user_error(
    indexed_read_only: Path, tsm: Any, stdin: str, message: str
) -> None:
    done = tsm("context", "-f", "json", input=stdin)
    assert done.code == 1
    assert done.error()["kind"] == "user_error"
    assert done.error()["error"].startswith(message)
    assert "Traceback" not in done.err


def test_the_thresholds_come_from_the_environment(indexed_read_only: Path, tsm: Any) -> None:
    done = tsm("context", input=hook_input(ABOUT_THE_VAULT, indexed_read_only))
    assert done.out
    strict = tsm(
        "context",
        input=hook_input(ABOUT_THE_VAULT, indexed_read_only),
        env={"TSM_INJECT_MIN_SCORE": "1000"},
    )
    assert (strict.code, strict.out) == (0, ""), strict.err


def test_the_core_operation_in_process(indexed_read_only: Path) -> None:
    knowledge = LocalKnowledge(load(indexed_read_only, os.environ))
    try:
        about = knowledge.context(ContextRequest(ABOUT_THE_VAULT, Policy()))
        unrelated = knowledge.context(ContextRequest(UNRELATED, Policy()))
    finally:
        knowledge.close()
    assert about.xml is not None and about.decisions[0].injected
    assert about.decisions[0].path == "decisions/0001-use-sqlite.md"
    assert unrelated.xml is None and not any(d.injected for d in unrelated.decisions)


def test_a_100kb_prompt_is_cut_to_a_query_of_at_most_200_characters(
    indexed_read_only: Path, tsm: Any
) -> None:
    prompt = "how do I install git please\n" + "pasted log line 0123456789\n" * 4_000
    assert len(prompt.encode()) > 100_000
    done = tsm("context", "--explain", "-f", "json", input=json.dumps({"prompt": prompt}))
    assert done.code == 0, done.err
    query = done.json()["query"]
    assert query.startswith("how do I install git please pasted log line")
    assert len(query) <= 200
