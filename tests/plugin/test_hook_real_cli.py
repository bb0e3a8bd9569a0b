"""The hooks against the real `tsm` CLI on a small vault: what Claude Code would receive.

Skipped only where the CLI is not installed; CI installs the package, so there they run.
"""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_home import project_dir
from patience import scaled
from pg import Stores
from plugin_harness import (
    TSM,
    HookRun,
    base_env,
    claude_input,
    log_lines,
    needs_tsm,
    run_hook,
    trust,
)

pytestmark = needs_tsm

# Cold starts (model load, first DB open) must not make these tests flaky; the deadline
# itself is tested in test_hook_processes.py.
GENEROUS_TIMEOUT = "120"

NOTES = {
    "research/lora-modules.md": """\
---
title: LoRa module comparison
status: current
tags: [radio, lora]
---
# LoRa modules

## Comparison

The SX1276 LoRa module reaches further than the RFM95 at the same spreading factor.
Both run at 920 MHz in Japan. See [[hunting-log]] for field tests.
""",
    "daily/hunting-log.md": """\
# 狩猟の記録

## 猟期

今年の猟期は十一月から始まる。狩猟免許を更新し、罠の見回りにLoRaの発信機を使った。
""",
    "notes/shell-setup.md": """\
# Shell setup

Install zsh, then set it as the login shell with chsh.
""",
}


def tsm(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert TSM is not None
    return subprocess.run(
        [TSM, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def vault(
    tmp_path_factory: pytest.TempPathFactory, stores: Stores, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """A vault indexed by the real CLI, state in the default <root>/.tsm (on PostgreSQL,
    the index in a database every test using this fixture gets)."""
    root = tmp_path_factory.mktemp("vault")
    for name, text in NOTES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    with stores.for_fixture(request.module.__name__, request.fixturename) as store:
        done = tsm("index", "-f", "json", str(root), cwd=root, env=base_env(**store))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["indexed"] == len(NOTES)
        yield root


@pytest.fixture(autouse=True)
def trusted(vault: Path) -> None:
    """Each test has its own user config dir; the user trusts the vault in it."""
    trust(vault)


def hook_env(**overrides: str) -> dict[str, str]:
    assert TSM is not None
    return base_env(**{"TSM_BIN": TSM, "TSM_HOOK_TIMEOUT": GENEROUS_TIMEOUT, **overrides})


def ask(vault: Path, prompt: str, **env: str) -> HookRun:
    payload = claude_input("UserPromptSubmit", vault, prompt=prompt)
    return run_hook("user_prompt_submit", payload, env=hook_env(**env), cwd=vault, timeout=300)


def injected(run: HookRun, vault: Path) -> ET.Element:
    """What Claude Code would add to the context, parsed; the hook must have succeeded."""
    assert run.returncode == 0, run.stderr
    assert run.stdout, f"the hook printed nothing; its log ends: {log_lines(vault / '.tsm')[-2:]}"
    output: dict[str, Any] = run.output()
    assert list(output) == ["hookSpecificOutput"]
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "UserPromptSubmit"
    assert set(specific) == {"hookEventName", "additionalContext"}
    xml = specific["additionalContext"]
    assert isinstance(xml, str)
    return ET.fromstring(xml)


def search_paths(vault: Path, query: str) -> list[dict[str, Any]]:
    done = tsm(
        "search",
        "--format",
        "json",
        "--fallback",
        "fts-only",
        "-q",
        query,
        cwd=vault,
        env=base_env(),
    )
    assert done.returncode == 0, done.stderr
    return [r["source"] for r in json.loads(done.stdout)["results"]]


def test_a_prompt_gets_real_results_as_knowledge_search_xml(vault: Path) -> None:
    root = injected(ask(vault, "SX1276 LoRa module comparison"), vault)
    assert root.tag == "knowledge_search"
    assert root.get("query") == "SX1276 LoRa module comparison"
    results = root.findall("result")
    assert results, "the LoRa note should be found"
    assert int(root.get("count", "-1")) == len(results) <= 5
    assert int(root.get("total", "-1")) >= len(results)
    assert [r.get("index") for r in results] == [str(i) for i in range(1, len(results) + 1)]
    for result in results:
        assert re.fullmatch(r"\d+\.\d{3}", result.get("score", ""))
        assert [c.tag for c in result][:3] == ["source", "section", "snippet"]
        assert result.find("source").get("type")  # type: ignore[union-attr]
    first = results[0]
    assert (first.findtext("source") or "").endswith("lora-modules.md")
    assert first.find("source").get("status") == "current"  # type: ignore[union-attr]
    assert "Comparison" in (first.findtext("section") or "")
    assert "SX1276" in (first.findtext("snippet") or "")


def test_a_japanese_prompt_finds_the_japanese_note(vault: Path) -> None:
    root = injected(ask(vault, "狩猟免許の更新について"), vault)
    paths = [r.findtext("source") or "" for r in root.findall("result")]
    assert any(p.endswith("hunting-log.md") for p in paths), paths


def test_a_natural_sentence_prompt_finds_its_note(vault: Path) -> None:
    # Prompts are sentences, not keyword lists: words like "which" must not veto a match.
    root = injected(ask(vault, "Which LoRa module did I say reaches further?"), vault)
    paths = [r.findtext("source") or "" for r in root.findall("result")]
    assert any(p.endswith("lora-modules.md") for p in paths), paths


def test_related_notes_come_from_wikilinks(vault: Path) -> None:
    # One result only: a linked note that is itself among the results is not repeated.
    root = injected(ask(vault, "SX1276 LoRa module comparison", TSM_INJECT_TOP_K="1"), vault)
    lora = next(
        r
        for r in root.findall("result")
        if (r.findtext("source") or "").endswith("lora-modules.md")
    )
    assert "hunting-log.md" in (lora.findtext("related") or "")


def test_a_zero_budget_keeps_results_but_drops_every_snippet(vault: Path) -> None:
    root = injected(ask(vault, "SX1276 LoRa module comparison", TSM_SNIPPET_BUDGET="0"), vault)
    results = root.findall("result")
    assert results
    snippets = [r.find("snippet") for r in results]
    assert all(s is not None and s.text is None and len(s) == 0 for s in snippets)


def test_top_k_limits_what_is_shown(vault: Path) -> None:
    root = injected(ask(vault, "LoRa 狩猟 shell", TSM_INJECT_TOP_K="1"), vault)
    assert len(root.findall("result")) <= 1


def test_a_score_floor_above_every_hit_injects_nothing(vault: Path) -> None:
    injected(ask(vault, "SX1276 LoRa module comparison"), vault)  # there are hits to drop
    logged = len(log_lines(vault / ".tsm"))
    run = ask(vault, "SX1276 LoRa module comparison", TSM_INJECT_MIN_SCORE="1000")
    assert run.returncode == 0
    assert run.stdout == b""
    assert log_lines(vault / ".tsm")[logged:] == []  # abstaining is not a failure


def test_a_hostile_prompt_still_yields_parsable_xml(vault: Path) -> None:
    prompt = 'LoRa <module> & "SX1276" ]]> </knowledge_search> 🦊 \x1b[31m'
    root = injected(ask(vault, prompt), vault)
    assert root.tag == "knowledge_search"
    assert "<module>" in (root.get("query") or "")


def test_a_100kb_prompt_still_answers_in_time(vault: Path) -> None:
    prompt = "SX1276 LoRa module comparison\n" + "pasted log line\n" * 7_000
    run = ask(vault, prompt)
    assert run.returncode == 0
    if run.stdout:
        injected(run, vault)


def test_post_tool_use_makes_a_new_note_searchable(vault: Path) -> None:
    note = vault / "notes" / "quokka.md"
    note.write_text("# Quokkas\n\nThe quokkaphonium antenna was tuned today.\n", "utf-8")
    payload = claude_input(
        "PostToolUse",
        vault,
        tool_name="Write",
        tool_input={"file_path": str(note), "content": note.read_text("utf-8")},
        tool_response={"filePath": str(note), "success": True},
        tool_use_id="toolu_01",
    )
    logged = len(log_lines(vault / ".tsm"))
    run = run_hook("post_tool_use", payload, env=hook_env(), cwd=vault, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""
    assert log_lines(vault / ".tsm")[logged:] == []
    assert any(s["path"].endswith("quokka.md") for s in search_paths(vault, "quokkaphonium"))


def test_stop_ingests_the_session_transcript(vault: Path, tmp_path: Path) -> None:
    session = "5c1b0a8e-2f51-4d61-9a57-0c0f3f1f7e21"
    transcript = project_dir(vault) / f"{session}.jsonl"  # where Claude Code writes it
    common = {
        "sessionId": session,
        "cwd": str(vault),
        "version": "2.1.197",
        "isSidechain": False,
        "userType": "external",
        "gitBranch": "",
    }
    lines = [
        {
            **common,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-03-15T09:00:00.000Z",
            "message": {"role": "user", "content": "How do I tune the wombatronic dipole?"},
        },
        {
            **common,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-03-15T09:00:05.000Z",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {"type": "text", "text": "Trim the wombatronic dipole 2 cm at a time."}
                ],
                "stop_reason": "end_turn",
            },
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    payload = claude_input("Stop", vault, stop_hook_active=False)
    payload.update(session_id=session, transcript_path=str(transcript))
    logged = len(log_lines(vault / ".tsm"))
    run = run_hook("stop", payload, env=hook_env(), cwd=vault, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""
    assert log_lines(vault / ".tsm")[logged:] == []
    sources = search_paths(vault, "wombatronic")
    assert any(s.get("type") == "session" for s in sources), sources


def test_the_first_prompt_after_a_cold_start_gets_results(
    tmp_path: Path, stores: Stores, request: pytest.FixtureRequest
) -> None:
    """No daemon runs: the first prompt of a session starts one (autostart) and, within the
    hook's own deadline, gets its results, from keywords if the daemon is still loading
    its model and vectors. The deadline is the default 4 s of a quiet
    machine, stretched by the load (patience.py)."""
    root = tmp_path / "cold"
    for name, text in NOTES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    trust(root)
    with stores.for_fixture(request.module.__name__, "cold") as store:
        env = base_env(**store)
        assert tsm("index", "-f", "json", cwd=root, env=env).returncode == 0
        assert (
            json.loads(tsm("status", "-f", "json", cwd=root, env=env).stdout)["daemon"]["state"]
            != "running"
        )
        try:
            payload = claude_input("UserPromptSubmit", root, prompt="SX1276 LoRa module comparison")
            run = run_hook(
                "user_prompt_submit",
                payload,
                env=hook_env(**store, TSM_AUTOSTART="1", TSM_HOOK_TIMEOUT=str(scaled(4.0))),
                cwd=root,
                timeout=300,
            )
            results = injected(run, root).findall("result")
            assert (results[0].findtext("source") or "").endswith("lora-modules.md")
            status = json.loads(tsm("status", "-f", "json", cwd=root, env=env).stdout)
            assert status["daemon"]["state"] == "running"  # the prompt started it
        finally:
            tsm("stop", cwd=root, env=env)
