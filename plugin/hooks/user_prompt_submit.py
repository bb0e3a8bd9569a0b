"""UserPromptSubmit hook: search the knowledge base for the prompt and inject the hits as
<knowledge_search> XML (prompt-format.md), or print nothing. It never blocks the prompt.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402 - the path above makes the hook runnable as a bare script
    HookFailure,
    HookInput,
    Workspace,
    env_float,
    env_positive_int,
    input_cwd,
    run_hook,
    run_tsm,
)
from knowledge_xml import (  # noqa: E402
    number,
    render_knowledge_search,
    result_score,
    snippet_budget,
)

HOOK_NAME = "user_prompt_submit"
MIN_PROMPT_CHARS = 3
# Why 200 characters: people state what they want first and paste logs or code after it, and
# a pasted tail only dilutes BM25 and the query embedding. 200 characters is a long Japanese
# sentence or ~35 English words: enough for the intent, short enough for a fast search.
QUERY_MAX_CHARS = 200
DEFAULT_TOP_K = 5
DEFAULT_MIN_SCORE = 0.0
# Fitted on the tune halves of both abstention vaults (bench/abstention/prompts.jsonl and the
# "tune" rows of docs-prompts.jsonl); their held-out halves are in bench/results/abstention*.
DEFAULT_MIN_RELEVANCE = -0.0125
DEFAULT_MIN_COVERAGE = 0.6
# Keywords vouch for a hit only when the vectors do not call the prompt a generic request: a
# prompt of one common word ("continue") or a coding request whose words a note happens to
# hold ("convert this callback-based function to async/await") covers a note fully.
COVERAGE_MIN_RELEVANCE = -0.02
# A word of the prompt naming a hit's path, or keywords covering the prompt, vouch for it only
# when the vectors single notes out at least this clearly (`vector_drop`, (top - 10th cosine)
# / (top - mean cosine)): 0.3 is the median drop on tsm's five retrieval sets
# (fuse.TYPICAL_VECTOR_DROP), not a fit to the abstention prompts; bench/abstention.py
# sweeps it with leave-one-set-out (each set's fit on the other three is 0.3).
DEFAULT_MIN_DROP = 0.3
# Words of a hit's path that the prompt names and no generic request uses ("undici",
# "certificate"): this many vouch for the hit on their own.
MIN_DISTINCT_NAMES = 2
# Well inside the 10 s timeout of hooks/hooks.json, which also covers Python's start-up.
DEFAULT_TIMEOUT_SECONDS = 4.0

_BREAK = re.compile(r"[\s。、．，！？!?]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def should_skip(prompt: str) -> bool:
    """Too short to search on, or system-generated (`<command-name>`, `<task-notification>` …)."""
    text = prompt.strip()
    return len(text) < MIN_PROMPT_CHARS or text.startswith("<")


def build_query(prompt: str, limit: int = QUERY_MAX_CHARS) -> str:
    """The prompt as one line of at most `limit` characters.

    A long prompt is cut at the last space or sentence punctuation in the second half of the
    window, so no word is split; Japanese text without such a break is cut at the limit.
    """
    text = _CONTROL.sub(" ", prompt).strip()
    if len(text) > limit:
        window = text[: limit + 1]
        breaks = [m.start() for m in _BREAK.finditer(window)]
        cut = breaks[-1] if breaks and breaks[-1] >= limit // 2 else limit
        text = text[:cut]
    return " ".join(text.split())


def search_command(query: str, top_k: int) -> list[str]:
    """The `tsm search` arguments; FTS fallback because a prompt must not wait for a model.

    A query that starts with `-` travels as `--query=…`, so the parser cannot take it for
    an option (`-q --help` would print help instead of searching).
    """
    query_args = [f"--query={query}"] if query.startswith("-") else ["-q", query]
    return ["search", "--format", "json", "-k", str(top_k), "--fallback", "fts-only", *query_args]


def additional_context(search_stdout: str, *, query: str, environ: Mapping[str, str]) -> str | None:
    """The XML for the hook output, or None to inject nothing.

    Results scoring below TSM_INJECT_MIN_SCORE are dropped. If tsm found nothing, the empty
    <knowledge_search/> of the spec says so; if hits existed but none cleared the bar, nothing
    is injected: "no results" would be untrue, and weak hits are the noise the bar removes.
    """
    try:
        search = json.loads(search_stdout)
    except json.JSONDecodeError as exc:
        raise HookFailure(f"`tsm search` printed invalid JSON: {exc}") from None
    if not isinstance(search, dict) or not isinstance(search.get("results"), list):
        raise HookFailure("`tsm search` JSON has no 'results' list")
    min_score = env_float(environ, "TSM_INJECT_MIN_SCORE", DEFAULT_MIN_SCORE)
    min_relevance = env_float(environ, "TSM_INJECT_MIN_RELEVANCE", DEFAULT_MIN_RELEVANCE)
    min_coverage = env_float(environ, "TSM_INJECT_MIN_COVERAGE", DEFAULT_MIN_COVERAGE)
    min_drop = env_float(environ, "TSM_INJECT_MIN_DROP", DEFAULT_MIN_DROP)
    found = [r for r in search["results"] if isinstance(r, dict)]
    kept = select_results(found, min_relevance, min_coverage, min_score, min_drop)
    if found and not kept:
        return None
    return render_knowledge_search(
        {**search, "results": kept}, budget=snippet_budget(environ), query=query
    )


def select_results(
    found: list[dict[str, object]],
    min_relevance: float,
    min_coverage: float,
    min_score: float = DEFAULT_MIN_SCORE,
    min_drop: float = DEFAULT_MIN_DROP,
) -> list[dict[str, object]]:
    """The hits worth injecting, best first, each text once.

    The same text under two paths (a README.md copied to docs/index.md, a page installed
    under two names) is injected once, at the better rank, with the other path added to its
    <related> paths: a second copy would spend the prompt's budget on nothing new.
    """
    kept: list[dict[str, object]] = []
    by_text: dict[str, dict[str, object]] = {}
    for result in found:
        if result_score(result) < min_score or not is_relevant(
            result, min_relevance, min_coverage, min_drop
        ):
            continue
        key = _text_key(result)
        first = by_text.get(key) if key else None
        if first is None:
            result = dict(result)  # the caller's dict stays as it was
            if key:
                by_text[key] = result
            kept.append(result)
            continue
        source = result.get("source")
        path = source.get("path") if isinstance(source, dict) else None
        if isinstance(path, str):
            related = first.get("related")
            first["related"] = [*(related if isinstance(related, list) else []), path]
    return kept


def _text_key(result: Mapping[str, object]) -> str | None:
    """What makes two hits the same text: the section and the chunk, whitespace folded."""
    text = result.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    section = result.get("section")
    return f"{section if isinstance(section, str) else ''}\x00{' '.join(text.split())}"


def is_relevant(
    result: Mapping[str, object],
    min_relevance: float,
    min_coverage: float,
    min_drop: float = DEFAULT_MIN_DROP,
) -> bool:
    """Whether a hit is about the prompt (calibrated in bench/abstention.py).

    `relevance` is the hit's cosine minus the prompt's best cosine with a generic coding
    request (tsm's search/relevance.py): at or above `min_relevance` the note is closer to
    the prompt than "fix this test" is. Unless the prompt vouches for the hit (`vouches`), it
    must also reach `noise`, the relevance only 1 % of the generic requests reach against
    this vault: documentation of a web framework sits close to everyday coding requests
    ("center a div with flexbox" and its README), and a prompt about such a vault names what
    it asks about ("fastify", "pino", "tune2fs"). A search without `noise` (an older tsm, no
    vectors) is judged on `min_relevance` alone. A hit holding most of the prompt's
    distinctive words (`coverage` at or above `min_coverage`) is kept too when vectors are
    unavailable (keywords are all there is), or when the vectors do not put the prompt well
    inside the generic requests (relevance at least COVERAGE_MIN_RELEVANCE) and the hit
    reaches `noise` or the prompt vouches for it: without that evidence a coding question
    whose words a note happens to hold ("let", "const") would come in by its keywords.
    """
    breakdown = result.get("score_breakdown")
    if not isinstance(breakdown, dict):
        return False
    relevance, coverage = number(breakdown.get("relevance")), number(breakdown.get("coverage"))
    noise = number(breakdown.get("noise"))
    vouched = noise is None or vouches(breakdown, min_coverage, min_drop)
    floor = min_relevance if noise is None or vouched else max(min_relevance, noise)
    if relevance is not None and relevance >= floor:
        return True
    if coverage is None or coverage < min_coverage:
        return False
    if relevance is None:
        return True
    return relevance >= COVERAGE_MIN_RELEVANCE and (vouched or noise is None or relevance >= noise)


def vouches(
    breakdown: Mapping[str, object],
    min_coverage: float = DEFAULT_MIN_COVERAGE,
    min_drop: float = DEFAULT_MIN_DROP,
) -> bool:
    """Whether the prompt itself is evidence that it asks about this hit, beyond relevance.

    Either it names MIN_DISTINCT_NAMES words of the hit's path that no generic request uses
    (`distinct_names`: "undici" and "certificate" for `undici/best-practices/
    client-certificate.md`), or the vectors single a few notes out (`vector_drop` at least
    `min_drop`) and the keywords agree: the prompt names the hit by a word of its path
    (`named`) or the hit holds most of its distinctive words (`coverage`). A name alone is
    weak evidence, since everyday words name pages too ("plugin", "websocket", "server"),
    and an everyday request that brushes one leaves the vectors a flat run of look-alike
    pages. A search that reports no drop (fewer than ten chunks ranked, an older tsm) is
    taken at its keywords."""
    distinct = number(breakdown.get("distinct_names"))
    if distinct is not None and distinct >= MIN_DISTINCT_NAMES:
        return True
    coverage = number(breakdown.get("coverage"))
    keywords = breakdown.get("named") is True or (coverage is not None and coverage >= min_coverage)
    drop = number(breakdown.get("vector_drop"))
    return keywords and (drop is None or drop >= min_drop)


def handle(data: HookInput, workspace: Workspace) -> str | None:
    """Search for the prompt and return the hook's JSON line, or None to stay silent."""
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        raise HookFailure("hook input has no string 'prompt'")
    query = build_query(prompt)
    if should_skip(prompt) or len(query) < MIN_PROMPT_CHARS or not workspace.configured:
        return None
    environ = dict(os.environ)
    stdout = run_tsm(
        search_command(query, env_positive_int(environ, "TSM_INJECT_TOP_K", DEFAULT_TOP_K)),
        workspace=workspace,
        session_cwd=input_cwd(data),
        timeout=_timeout(environ),
        environ=environ,
    )
    xml = additional_context(stdout, query=query, environ=environ)
    if xml is None:
        return None
    output = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": xml}}
    return json.dumps(output, ensure_ascii=False) + "\n"


def _timeout(environ: Mapping[str, str]) -> float:
    seconds = env_float(environ, "TSM_HOOK_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)
    return seconds if seconds > 0 else DEFAULT_TIMEOUT_SECONDS


if __name__ == "__main__":
    run_hook(HOOK_NAME, handle)
