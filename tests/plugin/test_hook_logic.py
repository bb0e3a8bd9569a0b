"""The hooks' pure parts: skip rules, query cutting, score floor, paths, workspace discovery."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from _common import HookFailure, find_workspace, log_failure, read_hook_input
from post_tool_use import index_command, path_in_root
from stop import ingest_command
from user_prompt_submit import (
    DEFAULT_MIN_DROP,
    QUERY_MAX_CHARS,
    additional_context,
    build_query,
    search_command,
    should_skip,
)

# --- skip rules and the query ---------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    [
        "",
        "  ",
        "ok",
        " y \n",
        "はい",
        "<command-name>/clear</command-name>",
        "  \n<task-notification>done</task-notification>",
        "<local-command-stdout>x</local-command-stdout>",
    ],
)
def test_skipped_prompts(prompt: str) -> None:
    assert should_skip(prompt)


@pytest.mark.parametrize("prompt", ["abc", "狩猟で", "why is a < b?", " fix the bug "])
def test_searched_prompts(prompt: str) -> None:
    assert not should_skip(prompt)


def test_short_query_is_the_prompt_on_one_line() -> None:
    assert build_query("  how do I\n\tinstall   git?  ") == "how do I install git?"
    assert build_query("狩猟　の記録") == "狩猟 の記録"  # ideographic space is whitespace too


def test_control_characters_never_reach_the_command_line() -> None:
    assert build_query("a\x00b\x1bc\x7fd") == "a b c d"


def test_long_english_prompt_is_cut_on_a_word_boundary() -> None:
    words = [f"word{i}" for i in range(20_000)]
    prompt = " ".join(words)  # > 100 KB
    query = build_query(prompt)
    assert len(query) <= QUERY_MAX_CHARS
    assert len(query) > QUERY_MAX_CHARS // 2
    assert query.split() == words[: len(query.split())]


def test_long_prompt_keeps_the_opening_request_and_drops_the_pasted_log() -> None:
    prompt = "Why does the indexer crash on this PDF?\n" + "Traceback line\n" * 10_000
    query = build_query(prompt)
    assert query.startswith("Why does the indexer crash on this PDF? Traceback line")
    assert len(query) <= QUERY_MAX_CHARS
    assert not query.endswith("Tracebac")


def test_long_japanese_prompt_is_cut_at_punctuation_or_the_limit() -> None:
    unbroken = "狩猟" * 50_000
    assert build_query(unbroken) == unbroken[:QUERY_MAX_CHARS]
    sentences = "今年の猟期の記録を見せて。" * 1_000
    query = build_query(sentences)
    assert len(query) <= QUERY_MAX_CHARS
    assert query.endswith("見せて")  # cut at 。 rather than inside a word


def test_a_prompt_of_exactly_the_limit_is_kept_whole() -> None:
    prompt = "x" * QUERY_MAX_CHARS
    assert build_query(prompt) == prompt


def test_search_command_is_the_contract_command_line() -> None:
    assert search_command("LoRa モジュール", 5) == [
        "search",
        "--format",
        "json",
        "-k",
        "5",
        "--fallback",
        "fts-only",
        "-q",
        "LoRa モジュール",
    ]


@pytest.mark.parametrize("query", ["--help", "-v", "- bullet point", "-k 3"])
def test_a_query_that_looks_like_an_option_is_passed_as_its_value(query: str) -> None:
    assert search_command(query, 5)[-1] == f"--query={query}"
    assert "-q" not in search_command(query, 5)


# --- the score floor and the XML handed to Claude ---------------------------------------------


def tsm_json(
    scores: list[float],
    total: int | None = None,
    relevance: list[float | None] | None = None,
    coverage: list[float | None] | None = None,
) -> str:
    """`tsm search -f json` output; every hit is relevant (0.01) unless told otherwise."""
    relevance = relevance or [0.01] * len(scores)
    coverage = coverage or [0.0] * len(scores)
    results = [
        {
            "chunk_id": i,
            "score": score,
            "score_breakdown": {
                "fts": score,
                "vector": None,
                "relevance": relevance[i],
                "coverage": coverage[i],
            },
            "text": f"text {i}",
            "snippet": f"snippet {i}",
            "section": "S",
            "related": [],
            "source": {"path": f"n/{i}.md", "type": "markdown", "category": "note", "status": None},
        }
        for i, score in enumerate(scores)
    ]
    total = len(scores) if total is None else total
    return json.dumps(
        {"query": "q", "results": results, "total_matches": total, "returned": len(scores)}
    )


def test_every_result_is_kept_by_default() -> None:
    xml = additional_context(tsm_json([0.03, 0.0, 0.01], total=9), query="q", environ={})
    assert xml is not None
    root = ET.fromstring(xml)
    assert (root.get("count"), root.get("total")) == ("3", "9")


def test_results_below_the_floor_are_dropped_and_the_rest_renumbered() -> None:
    environ = {"TSM_INJECT_MIN_SCORE": "0.02"}
    xml = additional_context(
        tsm_json([0.01, 0.03, 0.02, 0.001], total=30), query="q", environ=environ
    )
    assert xml is not None
    root = ET.fromstring(xml)
    assert (root.get("count"), root.get("total")) == ("2", "30")
    results = root.findall("result")
    assert [r.get("index") for r in results] == ["1", "2"]
    assert [r.findtext("source") for r in results] == ["n/1.md", "n/2.md"]


def test_nothing_is_injected_when_no_hit_clears_the_floor() -> None:
    environ = {"TSM_INJECT_MIN_SCORE": "0.5"}
    assert additional_context(tsm_json([0.1, 0.2]), query="q", environ=environ) is None


def test_no_hits_at_all_inject_the_empty_element_of_the_spec() -> None:
    xml = additional_context(tsm_json([]), query="q", environ={"TSM_INJECT_MIN_SCORE": "0.5"})
    assert xml == '<knowledge_search query="q" count="0" total="0"/>'


def test_hits_no_closer_than_a_generic_request_are_not_injected() -> None:
    """relevance < 0: the prompt is nearer a generic coding request than the note."""
    xml = additional_context(
        tsm_json([0.03, 0.02, 0.01], relevance=[0.02, -0.02, 0.0]), query="q", environ={}
    )
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == [
        "n/0.md",
        "n/2.md",
    ]


def test_an_unrelated_prompt_injects_nothing() -> None:
    out = additional_context(
        tsm_json([0.03, 0.02], relevance=[-0.02, -0.05]), query="q", environ={}
    )
    assert out is None


def test_keywords_covering_the_prompt_keep_a_hit_without_vectors() -> None:
    """--fallback fts-only: no relevance at all; coverage alone decides."""
    json_text = tsm_json([0.03, 0.02], relevance=[None, None], coverage=[0.8, 0.3])
    xml = additional_context(json_text, query="q", environ={})
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == ["n/0.md"]


def test_relevance_and_coverage_floors_come_from_the_environment() -> None:
    json_text = tsm_json([0.03, 0.02], relevance=[0.01, 0.03], coverage=[0.7, 0.1])
    environ = {"TSM_INJECT_MIN_RELEVANCE": "0.02", "TSM_INJECT_MIN_COVERAGE": "0.9"}
    xml = additional_context(json_text, query="q", environ=environ)
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == ["n/1.md"]


def test_the_vector_drop_floor_comes_from_the_environment() -> None:
    """A hit below the vault's noise level that the prompt names counts as vouched for only
    when the vectors single notes out (vector_drop at least TSM_INJECT_MIN_DROP, 0.3)."""
    data = json.loads(tsm_json([0.03], relevance=[0.01]))
    data["results"][0]["score_breakdown"] |= {"noise": 0.02, "named": True, "vector_drop": 0.2}
    assert additional_context(json.dumps(data), query="q", environ={}) is None
    xml = additional_context(json.dumps(data), query="q", environ={"TSM_INJECT_MIN_DROP": "0.1"})
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == ["n/0.md"]


def test_a_hit_the_prompt_does_not_name_must_reach_the_vaults_noise_level() -> None:
    """noise: the relevance 1 % of the generic requests reach against this vault; named: a
    word of the prompt is a word of the hit's path. A search without them (an older tsm,
    no vectors) is judged on the relevance floor alone."""
    data = json.loads(tsm_json([0.03, 0.02, 0.01], relevance=[0.01, 0.01, 0.03]))
    for result, named in zip(data["results"], [False, True, False], strict=True):
        result["score_breakdown"] |= {"noise": 0.02, "named": named}
    xml = additional_context(json.dumps(data), query="q", environ={})
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == [
        "n/1.md",
        "n/2.md",
    ]
    for result in data["results"]:
        result["score_breakdown"]["noise"] = None
    xml = additional_context(json.dumps(data), query="q", environ={})
    assert xml is not None
    assert len(ET.fromstring(xml).findall("result")) == 3


def test_a_name_vouches_for_a_hit_only_when_the_vectors_single_notes_out() -> None:
    """vector_drop: how clearly the vector ranking's top stands out. Named hits below the
    noise level: kept at a clear drop (or none reported), dropped at a flat one unless two
    path words no generic request uses are named (distinct_names); the keyword-coverage
    route needs the same evidence while the search reports a noise level."""
    data = json.loads(
        tsm_json([0.04, 0.03, 0.02, 0.01], relevance=[0.01] * 3 + [-0.015], coverage=[0.2] * 4)
    )
    drops = [DEFAULT_MIN_DROP + 0.1, None, DEFAULT_MIN_DROP - 0.1, DEFAULT_MIN_DROP - 0.1]
    for result, drop in zip(data["results"], drops, strict=True):
        result["score_breakdown"] |= {"noise": 0.02, "named": True, "vector_drop": drop}
    data["results"][3]["score_breakdown"]["coverage"] = 0.9
    xml = additional_context(json.dumps(data), query="q", environ={})
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == [
        "n/0.md",
        "n/1.md",
    ]
    data["results"][3]["score_breakdown"]["vector_drop"] = DEFAULT_MIN_DROP
    data["results"][2]["score_breakdown"]["distinct_names"] = 2  # "undici" + "certificate"
    xml = additional_context(json.dumps(data), query="q", environ={})
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == [
        "n/0.md",
        "n/1.md",
        "n/2.md",
        "n/3.md",
    ]


def test_a_hit_without_a_breakdown_is_not_injected() -> None:
    data = json.loads(tsm_json([0.03]))
    del data["results"][0]["score_breakdown"]
    assert additional_context(json.dumps(data), query="q", environ={}) is None


def test_a_malformed_floor_means_the_default() -> None:
    xml = additional_context(tsm_json([0.01]), query="q", environ={"TSM_INJECT_MIN_SCORE": "x"})
    assert xml is not None


def test_the_snippet_budget_comes_from_the_environment() -> None:
    xml = additional_context(tsm_json([0.1, 0.1]), query="q", environ={"TSM_SNIPPET_BUDGET": "9"})
    assert xml is not None
    assert xml.count("<snippet/>") == 1


@pytest.mark.parametrize(
    "stdout", ["", "not json", "[]", '{"results": null}', '{"query": "q"}', '"x"']
)
def test_bad_tsm_output_is_a_failure(stdout: str) -> None:
    with pytest.raises(HookFailure):
        additional_context(stdout, query="q", environ={})


# --- PostToolUse and Stop -------------------------------------------------------------------


def test_path_in_root(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.md").write_text("x")
    assert path_in_root(root / "sub" / "a.md", root) == Path("sub/a.md")
    assert path_in_root(tmp_path / "elsewhere.md", root) is None
    assert path_in_root(tmp_path / "vault-sibling" / "a.md", root) is None


def test_path_in_root_sees_through_a_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "notes").mkdir(parents=True)
    (real / "notes" / "a.md").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert path_in_root(real / "notes" / "a.md", link) == Path("notes/a.md")
    assert path_in_root(link / "notes" / "a.md", real) == Path("notes/a.md")


def test_index_and_ingest_command_lines() -> None:
    assert index_command(Path("notes/a.md")) == ["index", "-f", "json", "--", "notes/a.md"]
    assert ingest_command(Path("/t/s.jsonl")) == [
        "ingest-session",
        "-f",
        "json",
        "--",
        "/t/s.jsonl",
    ]


# --- workspace discovery (CONTRACT.md "Workspace and configuration") --------------------------


def test_workspace_defaults_to_cwd_and_is_unconfigured(tmp_path: Path) -> None:
    ws = find_workspace(tmp_path, {})
    assert (ws.root, ws.state_dir, ws.configured) == (tmp_path, tmp_path / ".tsm", False)


def test_a_state_dir_or_tsm_toml_alone_is_not_the_user_setting_tsm_up(tmp_path: Path) -> None:
    """A cloned repository can ship both (README "Trust model")."""
    (tmp_path / ".tsm").mkdir()
    (tmp_path / "tsm.toml").write_text("")
    ws = find_workspace(tmp_path / ".tsm", {"HOME": str(tmp_path / "home")})
    assert (ws.root, ws.configured) == (tmp_path, False)


def test_a_trusted_root_is_configured(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    (tmp_path / "inner" / "deeper").mkdir(parents=True)
    xdg = tmp_path / "xdg" / "tsm"
    xdg.mkdir(parents=True)
    (xdg / "trusted-roots.txt").write_text(f"{tmp_path}\n")
    ws = find_workspace(tmp_path / "inner" / "deeper", {"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert (ws.root, ws.state_dir, ws.configured) == (tmp_path, tmp_path / ".tsm", True)


def test_nearest_tsm_toml_above_cwd_is_the_root(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    (tmp_path / "inner" / "deeper").mkdir(parents=True)
    (tmp_path / "inner" / "tsm.toml").write_text("")
    ws = find_workspace(tmp_path / "inner" / "deeper", {})
    assert ws.root == tmp_path / "inner"
    assert ws.state_dir == tmp_path / "inner" / ".tsm"


def test_environment_wins_over_tsm_toml(tmp_path: Path) -> None:
    (tmp_path / "tsm.toml").write_text("")
    elsewhere = tmp_path / "elsewhere"
    ws = find_workspace(tmp_path, {"TSM_INDEX_ROOT": str(elsewhere)})
    assert (ws.root, ws.state_dir, ws.configured) == (elsewhere, elsewhere / ".tsm", True)
    state = tmp_path / "state"
    ws = find_workspace(tmp_path, {"TSM_STATE_DIR": str(state)})
    assert (ws.root, ws.state_dir, ws.configured) == (tmp_path, state, False)


def test_a_db_path_alone_does_not_trust_the_root(tmp_path: Path) -> None:
    assert not find_workspace(tmp_path, {"TSM_DB_PATH": str(tmp_path / "x.db")}).configured


# --- input and log --------------------------------------------------------------------------


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data


@pytest.mark.parametrize("raw", [b"", b"\xff\xfe", b"{", b"[]", b"null", b'"prompt"', b"42"])
def test_hook_input_must_be_a_json_object(raw: bytes) -> None:
    with pytest.raises(HookFailure):
        read_hook_input(_Bytes(raw))  # type: ignore[arg-type]


def test_hook_input_object_is_returned() -> None:
    data: dict[str, Any] = {"prompt": "狩猟", "cwd": "/x"}
    assert read_hook_input(_Bytes(json.dumps(data).encode())) == data  # type: ignore[arg-type]


def test_log_lines_are_single_timestamped_lines(tmp_path: Path) -> None:
    ws = find_workspace(
        tmp_path, {"TSM_INDEX_ROOT": str(tmp_path), "TSM_STATE_DIR": str(tmp_path / "state")}
    )
    log_failure(ws, "stop", "first\nsecond   line")
    lines = (tmp_path / "state" / "logs" / "hooks.log").read_text().splitlines()
    assert len(lines) == 1
    stamp, hook, message = lines[0].split(" ", 2)
    assert stamp[:4].isdigit() and "T" in stamp
    assert (hook, message) == ("stop:", "first\\nsecond   line")  # escaped, not collapsed


def test_the_log_rotates_instead_of_growing_forever(tmp_path: Path) -> None:
    ws = find_workspace(tmp_path, {"TSM_INDEX_ROOT": str(tmp_path), "TSM_STATE_DIR": str(tmp_path)})
    log = tmp_path / "logs" / "hooks.log"
    log.parent.mkdir()
    log.write_text("x" * 1_000_001)
    log_failure(ws, "stop", "fresh")
    assert log.read_text().endswith("stop: fresh\n")
    assert (tmp_path / "logs" / "hooks.log.1").stat().st_size == 1_000_001


def test_a_broken_log_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    log_failure(find_workspace(tmp_path, {"TSM_STATE_DIR": str(blocker)}), "stop", "lost")


def test_an_unconfigured_workspace_logs_to_stderr_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_failure(find_workspace(tmp_path, {}), "stop", "boom")
    assert "stop: boom" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
