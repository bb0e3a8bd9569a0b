"""The prompt hook never puts a secret into a prompt: notes keep their words
verbatim, so the hook redacts what it injects, and a snippet that cuts a secret short (its
shape no longer matches) is dropped. Also: the XML it renders is well-formed for any input."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_harness import TSM, base_env, claude_input, needs_tsm, run_hook, trust

from tsm.core.knowledge_xml import render_knowledge_search, shown_text
from tsm.text.redaction import find_secrets

ANT = "sk-ant-" + "api03-" + "Hk4" * 30
AWS = "AKIA" + "QYLPMN5HBD7X2EXA"
PEM_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
NOTE = f"""\
# Deploy credentials

## Gateway

The staging gateway key is {ANT} and the deploy user logs in with password=Gr8tZebra!x
against postgres://deploy:Gr8tZebra!x@staging-db:5432/app.

## Backup bucket

aws_access_key_id = {AWS}

-----BEGIN OPENSSH PRIVATE KEY-----
{PEM_BODY}
{PEM_BODY}
-----END OPENSSH PRIVATE KEY-----
"""
SECRETS = (ANT, AWS, "Gr8tZebra", PEM_BODY)


def result(snippet: str, text: str) -> dict[str, Any]:
    return {
        "score": 0.5,
        "snippet": snippet,
        "text": text,
        "section": "Keys",
        "source": {"path": "notes/keys.md", "category": "note", "type": "markdown"},
        "score_breakdown": {"relevance": 1.0, "coverage": 1.0},
    }


def test_the_renderer_redacts_snippets_and_sections() -> None:
    hit = result(
        f"…gateway key is {ANT} and the deploy user logs in with password=Gr8tZebra!x against…",
        NOTE,
    )
    hit["section"] = f"Keys > {AWS}"
    xml = render_knowledge_search({"query": "key", "results": [hit], "total_matches": 1})
    assert not any(secret in xml for secret in SECRETS)
    assert "[redacted:anthropic-key]" in xml and "[redacted:aws-access-key]" in xml


def test_a_snippet_that_cuts_a_secret_short_is_dropped() -> None:
    cut = "…staging gateway key is " + ANT[:16] + "…"  # too short to match the key's shape
    assert find_secrets(cut) == []
    xml = render_knowledge_search({"query": "gateway", "results": [result(cut, NOTE)]})
    assert ANT[:16] not in xml
    assert ET.fromstring(xml).find("result/snippet").text is None  # type: ignore[union-attr]
    clean = "…Backup bucket…"
    xml = render_knowledge_search({"query": "bucket", "results": [result(clean, NOTE)]})
    assert ET.fromstring(xml).findtext("result/snippet") == "\n…Backup bucket…\n"


@needs_tsm
def test_the_real_hook_never_injects_a_secret_from_a_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "deploy.md").write_text(NOTE, encoding="utf-8")
    env = base_env(TSM_EMBEDDER="none", TSM_INDEX_ROOT=str(vault))
    assert TSM is not None
    done = subprocess.run(
        [TSM, "index", "-f", "json"],
        cwd=vault,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    trust(vault)
    # The user's own search shows the note verbatim: it is their text.
    searched = subprocess.run(
        [TSM, "search", "staging gateway key", "--fts-only", "-f", "json"],
        cwd=vault,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ANT in searched.stdout
    for prompt in (
        "What is the staging gateway key?",
        "What is the deploy password?",
        "Show the backup bucket aws access key",
        "OPENSSH private key deploy",
    ):
        run = run_hook(
            "user_prompt_submit",
            claude_input("UserPromptSubmit", vault, prompt=prompt),
            env={
                **env,
                "TSM_BIN": TSM,
                "TSM_HOOK_TIMEOUT": "120",
                "TSM_INJECT_MIN_RELEVANCE": "-1",
                "TSM_INJECT_MIN_COVERAGE": "0",
            },
            cwd=vault,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        context = run.output()["hookSpecificOutput"]["additionalContext"]
        assert "deploy.md" in context, prompt  # the note was found and injected…
        assert not any(secret in context for secret in SECRETS), prompt  # …without secrets
        ET.fromstring(context)


# --- any input renders as well-formed XML ---------------------------------------------------

ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=60) | st.sampled_from(
    [
        "]]>",
        "<![CDATA[",
        "&amp;",
        "&#0;",
        '"quoted"',
        "'single'",
        "\x00\x1b[31m",
        "\ud800",
        "\ufffe",
        ANT,
        "password=Gr8tZebra!x",
        "-----BEGIN RSA PRIVATE KEY-----",
    ]
)
ANY_VALUE = (
    ANY_TEXT
    | st.none()
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.lists(ANY_TEXT, max_size=2)
)


@st.composite
def results(draw: Any) -> dict[str, Any]:
    return {
        "score": draw(ANY_VALUE),
        "snippet": draw(ANY_VALUE),
        "text": draw(ANY_VALUE),
        "section": draw(ANY_VALUE),
        "source": draw(
            st.fixed_dictionaries(
                {
                    "path": ANY_VALUE,
                    "category": ANY_VALUE,
                    "type": ANY_VALUE,
                    "status": ANY_VALUE,
                }
            )
            | ANY_VALUE
        ),
        "related": draw(
            st.lists(st.fixed_dictionaries({"path": ANY_VALUE}) | ANY_TEXT, max_size=3) | ANY_VALUE
        ),
    }


@settings(max_examples=200, deadline=None)
@given(st.lists(results(), max_size=5), ANY_VALUE, st.integers(-5, 2000), ANY_VALUE)
def test_any_results_render_as_well_formed_xml(
    hits: list[dict[str, Any]], query: Any, budget: int, total: Any
) -> None:
    search = {"query": query, "results": hits, "total_matches": total}
    xml = render_knowledge_search(search, budget=budget, query="fallback")
    xml.encode("utf-8")
    root = ET.fromstring(xml)
    assert root.tag == "knowledge_search"
    shown = query if isinstance(query, str) else "fallback"
    assert root.get("query") == shown_text(shown)
    assert len(root.findall("result")) == int(root.get("count", "-1"))
    for snippet in root.iter("snippet"):
        assert find_secrets(snippet.text or "") == []


def test_a_secret_in_a_file_name_is_redacted_in_the_source_and_related_paths() -> None:
    hit = result("plain words", "plain words")
    hit["source"]["path"] = f"notes/{ANT}.md"
    hit["related"] = [{"path": f"keys/{AWS}.txt"}]
    xml = render_knowledge_search({"query": "q", "results": [hit]})
    assert json.loads(json.dumps(xml)) == xml
    root = ET.fromstring(xml)
    assert root.findtext("result/source") == "notes/[redacted:anthropic-key].md"
    assert root.findtext("result/related") == "keys/[redacted:aws-access-key].txt"


@pytest.mark.parametrize("snippet", ["", "   ", None])
def test_an_empty_snippet_falls_back_to_the_redacted_chunk_start(snippet: Any) -> None:
    xml = render_knowledge_search({"query": "q", "results": [result(snippet, f"key {ANT}")]})
    assert ANT not in xml and "[redacted:anthropic-key]" in xml
