"""The prompt context's pure parts (core/context.py): skip rules, query cutting, the
thresholds that decide which hits are injected, their order, and the XML handed to Claude."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tsm.core.context import (
    DEFAULT_MIN_DROP,
    QUERY_MAX_CHARS,
    Policy,
    build_query,
    decide,
    should_skip,
)


def additional_context(search_json: str, *, query: str, environ: dict[str, str]) -> str | None:
    """The XML injected for a search's JSON under the policy of `environ`, or None."""
    return decide(json.loads(search_json), Policy.from_environ(environ), query).xml


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
        tsm_json([0.03, 0.02, 0.01], relevance=[0.02, 0.0, -0.02]), query="q", environ={}
    )
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == [
        "n/0.md",
        "n/1.md",
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
    json_text = tsm_json([0.03, 0.02], relevance=[0.03, 0.01], coverage=[0.1, 0.7])
    environ = {"TSM_INJECT_MIN_RELEVANCE": "0.02", "TSM_INJECT_MIN_COVERAGE": "0.9"}
    xml = additional_context(json_text, query="q", environ=environ)
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == ["n/0.md"]
    xml = additional_context(json_text, query="q", environ={})
    assert xml is not None
    assert len(ET.fromstring(xml).findall("result")) == 2


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
    data = json.loads(tsm_json([0.03, 0.02, 0.01], relevance=[0.01, 0.03, 0.01]))
    for result, named in zip(data["results"], [True, False, False], strict=True):
        result["score_breakdown"] |= {"noise": 0.02, "named": named}
    xml = additional_context(json.dumps(data), query="q", environ={})
    assert xml is not None
    assert [r.findtext("source") for r in ET.fromstring(xml).findall("result")] == [
        "n/0.md",
        "n/1.md",
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


# --- the order of what is injected, and the reasons -------------------------------------------


def test_a_hit_ranked_above_an_injected_one_is_never_dropped() -> None:
    """The search ranks the first hit best: when a lower one is about the prompt, the first
    goes in too, said so in its reason, and the order of the XML is the search's."""
    data = json.loads(tsm_json([0.03, 0.02, 0.01], relevance=[-0.03, 0.02, -0.05]))
    injection = decide(data, Policy(), "q")
    assert injection.xml is not None
    shown = [r.findtext("source") for r in ET.fromstring(injection.xml).findall("result")]
    assert shown == ["n/0.md", "n/1.md"]
    first, second, third = injection.decisions
    assert first.injected and first.reason.startswith("ranked above an injected hit")
    assert second.injected and "reaches the relevance floor" in second.reason
    assert not third.injected and "below the relevance floor" in third.reason


def test_every_hit_gets_a_decision_with_its_reason() -> None:
    data = json.loads(tsm_json([0.03, 0.02], relevance=[-0.03, -0.04], coverage=[0.2, 0.1]))
    injection = decide(data, Policy(), "q")
    assert injection.xml is None
    assert [(d.rank, d.path, d.injected) for d in injection.decisions] == [
        (1, "n/0.md", False),
        (2, "n/1.md", False),
    ]
    assert all("keyword coverage" in d.reason for d in injection.decisions)


def test_the_same_text_twice_is_injected_once_with_the_reason() -> None:
    data = json.loads(tsm_json([0.03, 0.02]))
    data["results"][1]["text"] = data["results"][0]["text"]
    injection = decide(data, Policy(), "q")
    assert injection.xml is not None
    root = ET.fromstring(injection.xml)
    assert [r.findtext("related") for r in root.findall("result")] == ["n/1.md"]
    assert injection.decisions[1].reason == "same text as hit 1, added to its related paths"


def test_a_skipped_prompt_is_not_searched_and_says_why() -> None:
    from tsm.core.context import ContextRequest, find_context

    def search(request: object) -> object:
        raise AssertionError("a skipped prompt must not be searched")

    injection = find_context(ContextRequest("<command-name>/clear</command-name>"), search)  # type: ignore[arg-type]
    assert (injection.xml, injection.query) == (None, None)
    assert injection.skipped is not None and "system-generated" in injection.skipped
    assert injection.hook_output() == ""


@pytest.mark.parametrize("data", [None, [], "p", {"prompt": 3}, {"cwd": "/"}])
def test_a_hook_input_without_a_prompt_is_a_user_error(data: object) -> None:
    from tsm.core.context import ContextRequest
    from tsm.errors import UserError

    with pytest.raises(UserError):
        ContextRequest.from_hook_input(data, Policy())


@pytest.mark.parametrize("top_k", ["0", "-2", "many"])
def test_a_bad_top_k_means_five(top_k: str) -> None:
    assert Policy.from_environ({"TSM_INJECT_TOP_K": top_k}).top_k == 5
    assert Policy.from_environ({"TSM_INJECT_TOP_K": "3"}).top_k == 3
