"""`tsm context` output: the hook's own line, or the decision explained (JSON or text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .human_format import one_line, visible
from .json_format import dumps

if TYPE_CHECKING:
    from ..core.context import Injection


def context_output(injection: Injection, explain: bool, fmt: str) -> str:
    """What `tsm context` prints (without the final newline of a JSON or text answer): the
    hook's JSON line or nothing; with `explain`, the decision per hit."""
    if not explain:
        return injection.hook_output()
    if fmt == "json":
        return dumps(injection.as_json()) + "\n"
    return explain_text(injection) + "\n"


def explain_text(injection: Injection) -> str:
    if injection.query is None:
        return f"Nothing injected: {injection.skipped}."
    hits = injection.decisions
    injected = sum(d.injected for d in hits)
    lines = [f"Query: {one_line(injection.query)}"]
    if not hits:
        lines.append("No hits: the empty <knowledge_search/> is injected.")
    else:
        lines.append(f"{injected} of {len(hits)} hits injected.")
    for d in hits:
        where = one_line(f"{d.path} > {d.section}" if d.section else d.path)
        verdict = "injected" if d.injected else "withheld"
        lines.append(f"{d.rank:>3}. {verdict:<8} [{d.score:.3f}] {where}")
        lines.append(f"     {d.reason}")
    if injection.xml is not None:
        lines += ["", visible(injection.xml)]
    return "\n".join(lines)
