"""The prompt context: what the Claude Code prompt hook injects for a prompt, and why.

The hook hands tsm the JSON Claude Code sends (UserPromptSubmit) and prints what comes back.
Everything between is decided here, once, for the CLI, the daemon and the calibration bench
(bench/abstention.py): the query cut from the prompt, the search, which hits are about the
prompt (the thresholds below), one copy of each text, and the <knowledge_search> XML of
prompt-format.md with secrets redacted (core/knowledge_xml.py). Each hit carries the reason
it was injected or withheld, so a user can see the decision (`tsm context --explain`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import UserError
from ..models import SearchResult
from .knowledge_xml import number, render_knowledge_search, result_score, snippet_budget
from .request import SearchRequest

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
# / (top - mean cosine)): 0.3 is the median drop on tsm's five retrieval sets, not a fit
# to the abstention prompts.
DEFAULT_MIN_DROP = 0.3
# Words of a hit's path that the prompt names and no generic request uses ("undici",
# "certificate"): this many vouch for the hit on their own.
MIN_DISTINCT_NAMES = 2

_BREAK = re.compile(r"[\s。、．，！？!?]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Policy:
    """The injection thresholds; each can be set by the environment variable named in
    `ENVIRONMENT` (a malformed value means the default: a typo must not silence the hook)."""

    top_k: int = DEFAULT_TOP_K
    min_score: float = DEFAULT_MIN_SCORE
    min_relevance: float = DEFAULT_MIN_RELEVANCE
    min_coverage: float = DEFAULT_MIN_COVERAGE
    coverage_min_relevance: float = COVERAGE_MIN_RELEVANCE
    min_drop: float = DEFAULT_MIN_DROP
    min_distinct_names: int = MIN_DISTINCT_NAMES
    snippet_budget: int = 1000

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Policy:
        values: dict[str, Any] = {}
        for name, variable in ENVIRONMENT.items():
            default = getattr(cls, name)
            try:
                value = type(default)(environ[variable])
            except (KeyError, ValueError):
                continue
            if name == "top_k" and value <= 0:
                continue
            values[name] = value
        values["snippet_budget"] = snippet_budget(environ)
        return cls(**values)

    @classmethod
    def from_wire(cls, data: object) -> Policy:
        if not isinstance(data, dict):
            raise UserError("the context policy must be an object")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name not in known:
                raise UserError(f"unknown context policy field {name!r}")
            wanted = type(getattr(cls, name))
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UserError(f"context policy field {name!r} must be a number")
            values[name] = wanted(value)
        return cls(**values)


ENVIRONMENT = {
    "top_k": "TSM_INJECT_TOP_K",
    "min_score": "TSM_INJECT_MIN_SCORE",
    "min_relevance": "TSM_INJECT_MIN_RELEVANCE",
    "min_coverage": "TSM_INJECT_MIN_COVERAGE",
    "min_drop": "TSM_INJECT_MIN_DROP",
}


@dataclass(frozen=True)
class ContextRequest:
    """A prompt to find context for, with the thresholds and the clock to use."""

    prompt: str
    policy: Policy = field(default_factory=Policy)
    now: dt.datetime = field(default_factory=dt.datetime.now)

    @classmethod
    def from_hook_input(
        cls, data: object, policy: Policy, now: dt.datetime | None = None
    ) -> ContextRequest:
        """The request of the JSON Claude Code sends the UserPromptSubmit hook."""
        if not isinstance(data, dict):
            kind = "nothing" if data is None else f"a JSON {type(data).__name__}"
            raise UserError(f"the hook input is {kind}, not an object")
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            raise UserError("the hook input has no string 'prompt'")
        return cls(prompt, policy, now or dt.datetime.now())

    def to_wire(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "policy": asdict(self.policy), "now": self.now.isoformat()}

    @classmethod
    def from_wire(cls, data: object) -> ContextRequest:
        if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
            raise UserError("the context request must be an object with a string 'prompt'")
        now = data.get("now")
        try:
            clock = dt.datetime.fromisoformat(now) if isinstance(now, str) else dt.datetime.now()
        except ValueError:
            raise UserError(f"'now' is not an ISO date: {str(now)[:40]!r}") from None
        return cls(data["prompt"], Policy.from_wire(data.get("policy", {})), clock)


@dataclass(frozen=True)
class Decision:
    """One hit of the search and what became of it."""

    rank: int  # 1-based, in the search's order
    path: str
    section: str
    score: float
    injected: bool
    reason: str


@dataclass(frozen=True)
class Injection:
    """The answer: the XML to inject (None: inject nothing), the query it searched, why the
    prompt was not searched (`skipped`), and a decision per hit."""

    query: str | None
    xml: str | None
    decisions: tuple[Decision, ...] = ()
    skipped: str | None = None

    def hook_output(self) -> str:
        """What the hook prints: the hook's JSON line, or nothing."""
        if self.xml is None:
            return ""
        specific = {"hookEventName": "UserPromptSubmit", "additionalContext": self.xml}
        return json.dumps({"hookSpecificOutput": specific}, ensure_ascii=False) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "injected": self.xml is not None,
            "skipped": self.skipped,
            "additional_context": self.xml,
            "hits": [asdict(d) for d in self.decisions],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Injection:
        """An injection that crossed the daemon's socket."""
        return cls(
            query=data.get("query"),
            xml=data.get("additional_context"),
            decisions=tuple(Decision(**d) for d in data.get("hits") or ()),
            skipped=data.get("skipped"),
        )


def should_skip(prompt: str) -> str | None:
    """Why a prompt is not searched: too short, or system-generated (`<command-name>`,
    `<task-notification>` …); None to search it."""
    text = prompt.strip()
    if len(text) < MIN_PROMPT_CHARS:
        return f"the prompt is shorter than {MIN_PROMPT_CHARS} characters"
    if text.startswith("<"):
        return "the prompt is system-generated (it starts with '<')"
    return None


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


def find_context(
    request: ContextRequest, search: Callable[[SearchRequest], SearchResult]
) -> Injection:
    """Search for the prompt and decide what to inject. The search falls back to keywords
    when vectors are unavailable: a prompt must not wait for a model."""
    skipped = should_skip(request.prompt)
    query = build_query(request.prompt)
    if skipped is None and len(query) < MIN_PROMPT_CHARS:
        skipped = f"the prompt has fewer than {MIN_PROMPT_CHARS} searchable characters"
    if skipped is not None:
        return Injection(None, None, skipped=skipped)
    found = search(
        SearchRequest(query, top_k=request.policy.top_k, fallback="fts-only", now=request.now)
    )
    return decide(_as_json(found), request.policy, query)


def _as_json(result: SearchResult) -> dict[str, Any]:
    """The search's public JSON shape (render/json_format.py), which the policy reads."""
    return {
        "query": result.query,
        "results": [
            {**asdict(hit), "related": [asdict(r) for r in hit.related]} for hit in result.results
        ],
        "total_matches": result.total_matches,
    }


def decide(search: Mapping[str, Any], policy: Policy, query: str) -> Injection:
    """The injection for a search's JSON. If tsm found nothing, the empty <knowledge_search/>
    of the spec says so; if hits existed but none is about the prompt, nothing is injected:
    "no results" would be untrue, and weak hits are the noise the thresholds remove."""
    found = [r for r in search.get("results") or () if isinstance(r, Mapping)]
    kept, decisions = select_results(found, policy)
    xml = None
    if kept or not found:
        shown = {**search, "results": kept}
        xml = render_knowledge_search(shown, budget=policy.snippet_budget, query=query)
    return Injection(query, xml, tuple(decisions))


def select_results(
    found: Sequence[Mapping[str, Any]], policy: Policy
) -> tuple[list[dict[str, Any]], list[Decision]]:
    """The hits worth injecting, best first, each text once, and a decision per hit.

    A hit the search ranks above an injected one is injected too: the evidence that the
    prompt is about the vault is the best hit's, and dropping a stronger hit while a weaker
    one goes in would show the model the search's order upside down. The score floor is
    the user's own and applies to every hit. The same text under two paths (a README.md
    copied to docs/index.md) is injected once, at the better rank, with the other path added
    to its <related> paths: a second copy would spend the prompt's budget on nothing new.
    """
    verdicts = [_verdict(result, policy) for result in found]
    last = max((i for i, (ok, _) in enumerate(verdicts) if ok), default=-1)
    kept: list[dict[str, Any]] = []
    decisions: list[Decision] = []
    by_text: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, (result, (ok, reason)) in enumerate(zip(found, verdicts, strict=True)):
        injected = i <= last and result_score(result) >= policy.min_score
        if injected and not ok:
            reason = f"ranked above an injected hit ({reason})"
        key = _text_key(result)
        first = by_text.get(key) if key and injected else None
        if first is not None:
            related = first[1].get("related")
            first[1]["related"] = [*(related if isinstance(related, list) else []), _path(result)]
            injected, reason = False, f"same text as hit {first[0]}, added to its related paths"
        elif injected:
            shown = dict(result)  # the caller's dict stays as it was
            if key:
                by_text[key] = (i + 1, shown)
            kept.append(shown)
        decisions.append(
            Decision(
                i + 1,
                _path(result),
                _text(result.get("section")),
                result_score(result),
                injected,
                reason,
            )
        )
    return kept, decisions


def _verdict(result: Mapping[str, Any], policy: Policy) -> tuple[bool, str]:
    """Whether a hit is about the prompt on its own evidence, and why (in words)."""
    score = result_score(result)
    if score < policy.min_score:
        return False, f"score {score:.4f} below the floor {policy.min_score:g}"
    breakdown = result.get("score_breakdown")
    if not isinstance(breakdown, Mapping):
        return False, "the search gave no score breakdown"
    return relevance_verdict(breakdown, policy)


def relevance_verdict(breakdown: Mapping[str, Any], policy: Policy) -> tuple[bool, str]:
    """Whether a hit is about the prompt (calibrated in bench/abstention.py), and why.

    `relevance` is the hit's cosine minus the prompt's best cosine with a generic coding
    request (search/relevance.py): at or above `min_relevance` the note is closer to the
    prompt than "fix this test" is. Unless the prompt vouches for the hit (`vouches`), it
    must also reach `noise`, the relevance only 1 % of the generic requests reach against
    this vault: documentation of a web framework sits close to everyday coding requests, and
    a prompt about such a vault names what it asks about. A search without `noise` (no
    vectors) is judged on `min_relevance` alone. A hit holding most of the prompt's
    distinctive words (`coverage` at least `min_coverage`) is kept too when vectors are
    unavailable, or when the vectors do not put the prompt well inside the generic requests
    (relevance at least `coverage_min_relevance`) and the hit reaches `noise` or the prompt
    vouches for it: without that evidence a coding question whose words a note happens to
    hold ("let", "const") would come in by its keywords.
    """
    relevance, coverage = number(breakdown.get("relevance")), number(breakdown.get("coverage"))
    noise = number(breakdown.get("noise"))
    vouched = noise is not None and vouches(breakdown, policy)
    floor = policy.min_relevance if noise is None or vouched else max(policy.min_relevance, noise)
    floor_name = (
        "the relevance floor"
        if floor == policy.min_relevance
        else "the vault's noise level (the prompt does not vouch for it)"
    )
    if relevance is not None and relevance >= floor:
        return True, f"relevance {relevance:+.4f} reaches {floor_name} {floor:+.4f}"
    said = (
        "no relevance (no vectors)"
        if relevance is None
        else f"relevance {relevance:+.4f} below {floor_name} {floor:+.4f}"
    )
    if coverage is None or coverage < policy.min_coverage:
        shown = "no" if coverage is None else f"{coverage:.2f}"
        return False, f"{said}, and keyword coverage {shown} below {policy.min_coverage:g}"
    covered = f"keyword coverage {coverage:.2f} reaches {policy.min_coverage:g}"
    if relevance is None:
        return True, f"{covered} ({said})"
    if relevance < policy.coverage_min_relevance:
        return False, (
            f"{said}; {covered}, but the prompt reads as a generic request "
            f"(relevance below {policy.coverage_min_relevance:+.4f})"
        )
    if noise is None or vouched or relevance >= noise:
        return True, f"{covered} ({said})"
    return False, f"{said}; {covered}, but it is below the vault's noise level {noise:+.4f}"


def vouches(breakdown: Mapping[str, Any], policy: Policy) -> bool:
    """Whether the prompt itself is evidence that it asks about this hit, beyond relevance.

    Either it names `min_distinct_names` words of the hit's path that no generic request
    uses (`distinct_names`: "undici" and "certificate" for `undici/best-practices/
    client-certificate.md`), or the vectors single a few notes out (`vector_drop` at least
    `min_drop`) and the keywords agree: the prompt names the hit by a word of its path
    (`named`) or the hit holds most of its distinctive words (`coverage`). A name alone is
    weak evidence, since everyday words name pages too ("plugin", "server"), and an everyday
    request that brushes one leaves the vectors a flat run of look-alike pages. A search
    that reports no drop (fewer than ten chunks ranked) is taken at its keywords."""
    distinct = number(breakdown.get("distinct_names"))
    if distinct is not None and distinct >= policy.min_distinct_names:
        return True
    coverage = number(breakdown.get("coverage"))
    keywords = breakdown.get("named") is True or (
        coverage is not None and coverage >= policy.min_coverage
    )
    drop = number(breakdown.get("vector_drop"))
    return keywords and (drop is None or drop >= policy.min_drop)


def _text_key(result: Mapping[str, Any]) -> str | None:
    """What makes two hits the same text: the section and the chunk, whitespace folded."""
    text = result.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    section = result.get("section")
    return f"{section if isinstance(section, str) else ''}\x00{' '.join(text.split())}"


def _path(result: Mapping[str, Any]) -> str:
    source = result.get("source")
    return _text(source.get("path")) if isinstance(source, Mapping) else ""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
