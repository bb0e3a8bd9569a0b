"""Abstention calibration for the UserPromptSubmit hook: when should it inject nothing?

RRF scores only order results (the top hit scores ~1/61 per signal whether it is relevant or
not), so the hook needs an absolute cue. This bench fits relevance rules over the two cues
every result carries in `score_breakdown` (`similarity`: e5 cosine; `coverage`: IDF-weighted
share of the query's words in the chunk) on a fixture vault and prompt set:

    bench/abstention/vault/           31 personal notes, English and Japanese
    bench/abstention/prompts.jsonl    38 prompts about one note ("expect": its path) and
                                      38 ordinary coding requests ("expect": null)

Steps (all through the real CLI and the real hook; a warm daemon in a temp state dir):

1. `tsm index` the vault (TSM_INDEX_ROOT / TSM_STATE_DIR), `tsm start`.
2. Per prompt: run plugin/hooks/user_prompt_submit.py with the JSON Claude Code sends
   (TSM_BIN = the venv's tsm, no minimum score: today's behaviour), and collect the raw
   `tsm search -f json -k 5` output for the hook's query (hybrid and --fts-only).
3. Offline: for each rule family, fit parameters and threshold (maximise the worse of the
   two rates), on all prompts ("fitted") and leave-one-out ("held-out").
4. End to end for the chosen rule: the real hook again, TSM_BIN = a shim that runs the real
   `tsm search` and replaces each result's `score` by the rule's relevance (what the engine's
   future `relevance` field will carry), TSM_INJECT_MIN_SCORE = the threshold; the injected
   XML is parsed and scored.

Rates: relevant = prompts whose expected note is among the first 3 injected results;
unrelated = prompts with no injection at all.

    .venv/bin/python bench/abstention.py              # collect, evaluate, end-to-end (~2 min)
    .venv/bin/python bench/abstention.py --offline    # re-evaluate bench/abstention/last_run.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "abstention"
VAULT = HERE / "vault"
PROMPTS = HERE / "prompts.jsonl"
CACHE = HERE / "last_run.json"
HOOK = ROOT / "plugin" / "hooks" / "user_prompt_submit.py"
TOP_K = 5
RELEVANT_RANKS = 3
GOAL = 0.90

Result = dict[str, Any]
# relevance(result, all returned results) -> float; higher = more relevant
Relevance = Callable[[Result, Sequence[Result]], float]
# Keys the bench adds to each result from a --vec-only search over the whole vault:
BACKGROUND = "_background"  # the query's mean similarity to every note
NEAREST = "_nearest"  # the similarities of the query's nearest notes, best first


# ---------------------------------------------------------------- relevance rules


def sim(result: Result) -> float | None:
    value = result.get("score_breakdown", {}).get("similarity")
    return float(value) if isinstance(value, (int, float)) else None


def cov(result: Result) -> float:
    value = result.get("score_breakdown", {}).get("coverage")
    return float(value) if isinstance(value, (int, float)) else 0.0


def floor_sim(results: Sequence[Result]) -> float | None:
    """The lowest similarity among the returned results: this query's 'background'."""
    values = [s for s in map(sim, results) if s is not None]
    return min(values) if values else None


def bg(result: Result) -> float | None:
    value = result.get(BACKGROUND)
    return float(value) if isinstance(value, (int, float)) else None


def nth(result: Result, n: int) -> float | None:
    """Similarity of the query's n-th nearest note (vector ranking, best chunk per note)."""
    values = result.get(NEAREST) or []
    return float(values[n - 1]) if len(values) >= n else None


def clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


@dataclass(frozen=True)
class Family:
    """A rule family: params → per-result relevance (higher = more relevant)."""

    name: str
    formula: str
    grid: list[tuple[float, ...]]
    make: Callable[..., Relevance]


def _sim_only() -> Relevance:
    return lambda r, _rs: sim(r) or 0.0


def _cov_only() -> Relevance:
    return lambda r, _rs: cov(r)


def _max_cov_scaled(lo: float, hi: float) -> Relevance:
    def rel(r: Result, _rs: Sequence[Result]) -> float:
        s = sim(r)
        return max(cov(r), clip01((s - lo) / (hi - lo)) if s is not None else 0.0)

    return rel


def _linear(w: float) -> Relevance:
    return lambda r, _rs: (sim(r) or 0.0) + w * cov(r)


def _margin() -> Relevance:
    def rel(r: Result, rs: Sequence[Result]) -> float:
        s, f = sim(r), floor_sim(rs)
        return s - f if s is not None and f is not None else 0.0

    return rel


def _max_cov_margin(scale: float) -> Relevance:
    def rel(r: Result, rs: Sequence[Result]) -> float:
        s, f = sim(r), floor_sim(rs)
        return max(cov(r), clip01((s - f) * scale) if s is not None and f is not None else 0.0)

    return rel


def _linear_margin(w: float) -> Relevance:
    def rel(r: Result, rs: Sequence[Result]) -> float:
        s, f = sim(r), floor_sim(rs)
        return (s - f if s is not None and f is not None else 0.0) + w * cov(r)

    return rel


def _gap() -> Relevance:
    def rel(r: Result, rs: Sequence[Result]) -> float:
        s = sim(r)
        others = [x for x in map(sim, rs) if x is not None]
        others.remove(s) if s is not None else None
        return s - max(others) if s is not None and others else 0.0

    return rel


def _gap_gate() -> Relevance:
    """Query-level: every result gets the best similarity minus the second best."""

    def rel(_r: Result, rs: Sequence[Result]) -> float:
        values = sorted((x for x in map(sim, rs) if x is not None), reverse=True)
        return values[0] - values[1] if len(values) > 1 else 0.0

    return rel


def _margin_gate() -> Relevance:
    """Query-level: every result gets the best similarity minus the lowest."""

    def rel(_r: Result, rs: Sequence[Result]) -> float:
        values = [x for x in map(sim, rs) if x is not None]
        return max(values) - min(values) if values else 0.0

    return rel


def _lift() -> Relevance:
    def rel(r: Result, _rs: Sequence[Result]) -> float:
        s, b = sim(r), bg(r)
        return s - b if s is not None and b is not None else 0.0

    return rel


def _lift_cov(w: float) -> Relevance:
    def rel(r: Result, _rs: Sequence[Result]) -> float:
        s, b = sim(r), bg(r)
        return (s - b if s is not None and b is not None else 0.0) + w * cov(r)

    return rel


def _max_cov_lift(scale: float) -> Relevance:
    def rel(r: Result, _rs: Sequence[Result]) -> float:
        s, b = sim(r), bg(r)
        return max(cov(r), clip01(scale * (s - b)) if s is not None and b is not None else 0.0)

    return rel


def _nth_margin(n: float, w: float) -> Relevance:
    def rel(r: Result, _rs: Sequence[Result]) -> float:
        s, f = sim(r), nth(r, int(n))
        return (s - f if s is not None and f is not None else 0.0) + w * cov(r)

    return rel


def frange(start: float, stop: float, step: float) -> list[float]:
    n = int(round((stop - start) / step))
    return [round(start + i * step, 6) for i in range(n + 1)]


FAMILIES = [
    Family("similarity", "relevance = similarity", [()], _sim_only),
    Family("coverage", "relevance = coverage", [()], _cov_only),
    Family(
        "max(cov, scaled sim) fixed",
        "relevance = max(coverage, clip((similarity - 0.75) / 0.2))",
        [(0.75, 0.95)],
        _max_cov_scaled,
    ),
    Family(
        "max(cov, scaled sim) fitted",
        "relevance = max(coverage, clip((similarity - LO) / (HI - LO)))",
        [(lo, lo + span) for lo in frange(0.70, 0.86, 0.02) for span in frange(0.04, 0.24, 0.02)],
        _max_cov_scaled,
    ),
    Family(
        "sim + w*cov",
        "relevance = similarity + W * coverage",
        [(w,) for w in frange(0.0, 0.30, 0.025)],
        _linear,
    ),
    Family("margin", "relevance = similarity - min(similarity of the k results)", [()], _margin),
    Family(
        "max(cov, scaled margin)",
        "relevance = max(coverage, clip(SCALE * (similarity - min sim of results)))",
        [(s,) for s in frange(2, 30, 2)],
        _max_cov_margin,
    ),
    Family(
        "margin + w*cov",
        "relevance = (similarity - min sim of results) + W * coverage",
        [(w,) for w in frange(0.0, 0.2, 0.01)],
        _linear_margin,
    ),
    Family(
        "margin to N-th nearest",
        "relevance = similarity - similarity of the N-th nearest note",
        [(n, 0.0) for n in range(3, 11)],
        _nth_margin,
    ),
    Family(
        "margin to N-th + w*cov",
        "relevance = (similarity - similarity of the N-th nearest note) + W * coverage",
        [(n, w) for n in range(3, 11) for w in frange(0.0, 0.1, 0.01)],
        _nth_margin,
    ),
    Family(
        "gap to next",
        "relevance = similarity - best other similarity among the results",
        [()],
        _gap,
    ),
    Family(
        "gap gate (query-level)",
        "relevance (all results) = best similarity - second-best similarity",
        [()],
        _gap_gate,
    ),
    Family(
        "margin gate (query-level)",
        "relevance (all results) = best similarity - lowest similarity",
        [()],
        _margin_gate,
    ),
    Family(
        "lift", "relevance = similarity - mean similarity of the query to all notes", [()], _lift
    ),
    Family(
        "lift + w*cov",
        "relevance = (similarity - mean sim to all notes) + W * coverage",
        [(w,) for w in frange(0.0, 0.2, 0.01)],
        _lift_cov,
    ),
    Family(
        "max(cov, scaled lift)",
        "relevance = max(coverage, clip(SCALE * (similarity - mean sim to all notes)))",
        [(s,) for s in frange(4, 40, 2)],
        _max_cov_lift,
    ),
]


# ---------------------------------------------------------------- scoring


def injected(results: Sequence[Result], relevance: Relevance, threshold: float) -> list[Result]:
    """What the hook keeps: every result whose relevance clears the bar, in rank order."""
    return [r for r in results if relevance(r, results) >= threshold]


def success(row: dict[str, Any], kept: Sequence[Result]) -> bool:
    if row["expect"] is None:
        return not kept
    return row["expect"] in [r["source"]["path"] for r in kept[:RELEVANT_RANKS]]


def rates(rows: Sequence[dict[str, Any]], ok: Sequence[bool]) -> tuple[float, float]:
    rel = [o for row, o in zip(rows, ok, strict=True) if row["expect"] is not None]
    unrel = [o for row, o in zip(rows, ok, strict=True) if row["expect"] is None]
    return sum(rel) / max(1, len(rel)), sum(unrel) / max(1, len(unrel))


@dataclass
class Cell:
    params: tuple[float, ...]
    threshold: float
    ok: list[bool]
    rel_ok: int = 0
    unrel_ok: int = 0


def candidate_thresholds(values: Iterable[float]) -> list[float]:
    """Midpoints between the distinct relevance values (plus one below and one above)."""
    xs = sorted(set(round(v, 6) for v in values))
    if not xs:
        return [0.0]
    return [xs[0] - 1e-3] + [(a + b) / 2 for a, b in itertools.pairwise(xs)] + [xs[-1] + 1e-3]


def cells(family: Family, rows: Sequence[dict[str, Any]], key: str) -> list[Cell]:
    out = []
    for params in family.grid:
        relevance = family.make(*params)
        scored = [[(r, relevance(r, row[key])) for r in row[key]] for row in rows]
        for t in candidate_thresholds(v for s in scored for _, v in s):
            ok = [
                success(row, [r for r, v in s if v >= t])
                for row, s in zip(rows, scored, strict=True)
            ]
            rel_ok = sum(o for row, o in zip(rows, ok, strict=True) if row["expect"] is not None)
            out.append(Cell(params, t, ok, rel_ok, sum(ok) - rel_ok))
    return out


def objective(rows: Sequence[dict[str, Any]], cell: Cell, skip: int = -1) -> tuple[float, float]:
    """(worse rate, sum of rates) over the rows, leaving out row `skip`."""
    n_rel = sum(1 for row in rows if row["expect"] is not None)
    n_unrel = len(rows) - n_rel
    rel_ok, unrel_ok = cell.rel_ok, cell.unrel_ok
    if skip >= 0:
        if rows[skip]["expect"] is not None:
            n_rel, rel_ok = n_rel - 1, rel_ok - cell.ok[skip]
        else:
            n_unrel, unrel_ok = n_unrel - 1, unrel_ok - cell.ok[skip]
    rel, unrel = rel_ok / max(1, n_rel), unrel_ok / max(1, n_unrel)
    return (min(rel, unrel), rel + unrel)


def pick(family_cells: Sequence[Cell], rows: Sequence[dict[str, Any]], skip: int = -1) -> Cell:
    """The best cell; among equal ones, the middle threshold of the widest optimal plateau."""
    scored = [(objective(rows, c, skip), c) for c in family_cells]
    best = max(s for s, _ in scored)
    winners = [c for s, c in scored if s == best]
    by_params: dict[tuple[float, ...], list[Cell]] = {}
    for c in winners:
        by_params.setdefault(c.params, []).append(c)
    plateau = max(by_params.values(), key=len)
    return plateau[len(plateau) // 2]


def evaluate(family: Family, rows: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    family_cells = cells(family, rows, key)
    fitted = pick(family_cells, rows)
    loo = []
    for i in range(len(rows)):
        loo.append(pick(family_cells, rows, skip=i).ok[i])
    return {
        "family": family,
        "fitted": fitted,
        "fitted_rates": rates(rows, fitted.ok),
        "loo_rates": rates(rows, loo),
        "loo_ok": loo,
    }


# ---------------------------------------------------------------- running tsm and the hook


def tsm_env(state: Path, tsm: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env.update(
        {
            "TSM_INDEX_ROOT": str(VAULT),
            "TSM_STATE_DIR": str(state),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_BIN": str(tsm),
        }
    )
    return env


def run_tsm(tsm: Path, args: list[str], env: dict[str, str]) -> Any:
    done = subprocess.run(
        [str(tsm), *args], env=env, cwd=VAULT, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise SystemExit(f"tsm {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return json.loads(done.stdout)


def run_hook(prompt: str, env: dict[str, str], session: str) -> dict[str, Any]:
    """Feed the hook the JSON Claude Code sends; parse its stdout as Claude Code would."""
    payload = {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": str(VAULT),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HOOK)],
        input=json.dumps(payload),
        env=env,
        cwd=VAULT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    ms = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"hook exited {done.returncode}: {done.stderr}")
    if not done.stdout.strip():
        return {"injected": False, "paths": [], "ms": ms}
    xml = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    tree = ET.fromstring(xml)
    paths = [r.findtext("source") or "" for r in tree.findall("result")]
    return {"injected": bool(paths), "paths": paths, "ms": ms, "count": tree.get("count")}


def hook_query(prompt: str) -> str:
    sys.path.insert(0, str(HOOK.parent))
    from user_prompt_submit import build_query  # the hook's own prompt → query cut

    return build_query(prompt)


def annotate(results: list[Result], all_similarities: Sequence[float | None]) -> list[Result]:
    """Give each result the query's vault-wide background similarity (for the lift rules)."""
    values = sorted((x for x in all_similarities if isinstance(x, (int, float))), reverse=True)
    for r in results:
        r[BACKGROUND] = statistics.fmean(values) if values else None
        r[NEAREST] = values[:20]
    return results


def prepare(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for row in rows:
        annotate(row["hybrid"], row["all_similarities"])
        annotate(row["fts"], row["all_similarities"])
    return rows


def load_prompts() -> list[dict[str, Any]]:
    with PROMPTS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def collect(tsm: Path, state: Path) -> list[dict[str, Any]]:
    env = tsm_env(state, tsm)
    t0 = time.perf_counter()
    index = run_tsm(tsm, ["index", "-f", "json"], env)
    print(
        f"indexed {index['indexed']} notes, {index['chunks']} chunks "
        f"in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    run_tsm(tsm, ["start"], env)
    rows = load_prompts()
    for n, row in enumerate(rows, 1):
        query = hook_query(row["prompt"])
        row["query"] = query
        base = ["search", "-f", "json", "-k", str(TOP_K), "--fallback", "fts-only", "-q", query]
        hybrid = run_tsm(tsm, base, env)
        if hybrid.get("mode") != "hybrid":
            raise SystemExit(f"search fell back to {hybrid.get('mode')}: {hybrid.get('warnings')}")
        row["hybrid"] = hybrid["results"]
        row["fts"] = run_tsm(tsm, [*base, "--fts-only"], env)["results"]
        every = run_tsm(tsm, ["search", "-f", "json", "-k", "1000", "--vec-only", "-q", query], env)
        row["all_similarities"] = [r["score_breakdown"]["similarity"] for r in every["results"]]
        row["hook_baseline"] = run_hook(row["prompt"], env, f"abstention-{row['id']}")
        if n % 20 == 0:
            print(f"  collected {n}/{len(rows)}", flush=True)
    return rows


SHIM = '''#!{python}
"""TSM_BIN shim: the real tsm, with each search result's score replaced by the rule's relevance."""
import json, subprocess, sys
sys.path.insert(0, {bench!r})
import abstention
done = subprocess.run([{tsm!r}, *sys.argv[1:]], capture_output=True, text=True)
out = done.stdout
if done.returncode == 0 and sys.argv[1:2] == ["search"]:
    data = json.loads(out)
    rel = abstention.rule_from_spec(json.loads({spec!r}))
    results = data["results"]
    every = subprocess.run([{tsm!r}, "search", "-f", "json", "-k", "1000", "--vec-only",
                            "--query=" + data["query"]], capture_output=True, text=True)
    if every.returncode == 0:
        sims = [r["score_breakdown"]["similarity"] for r in json.loads(every.stdout)["results"]]
        abstention.annotate(results, sims)
    for r in results:
        r["score"] = round(rel(r, results), 6)
    out = json.dumps(data, ensure_ascii=False)
sys.stdout.write(out)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
'''


def rule_from_spec(spec: dict[str, Any]) -> Relevance:
    family = next(f for f in FAMILIES if f.name == spec["family"])
    return family.make(*spec["params"])


def end_to_end(
    rows: list[dict[str, Any]], tsm: Path, state: Path, spec: dict[str, Any], threshold: float
) -> list[dict[str, Any]]:
    shim = state.parent / "tsm-relevance-shim"
    shim.write_text(
        SHIM.format(
            python=sys.executable, bench=str(ROOT / "bench"), tsm=str(tsm), spec=json.dumps(spec)
        ),
        encoding="utf-8",
    )
    shim.chmod(0o755)
    env = tsm_env(state, shim)
    env["TSM_INJECT_MIN_SCORE"] = repr(threshold)
    return [run_hook(row["prompt"], env, f"abstention-final-{row['id']}") for row in rows]


# ---------------------------------------------------------------- report


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n_rel = sum(1 for r in rows if r["expect"] is not None)
    print(f"\n{len(rows)} prompts: {n_rel} relevant, {len(rows) - n_rel} unrelated")
    top3 = [
        r["expect"] in [x["source"]["path"] for x in r["hybrid"][:RELEVANT_RANKS]]
        for r in rows
        if r["expect"] is not None
    ]
    print(
        f"retrieval ceiling: expected note in the top {RELEVANT_RANKS} for "
        f"{sum(top3)}/{n_rel} relevant prompts ({pct(sum(top3) / n_rel)})"
    )
    base = [
        not r["hook_baseline"]["injected"]
        if r["expect"] is None
        else r["expect"] in r["hook_baseline"]["paths"][:RELEVANT_RANKS]
        for r in rows
    ]
    b_rel, b_unrel = rates(rows, base)
    print(f"hook today (TSM_INJECT_MIN_SCORE=0): relevant {pct(b_rel)}, unrelated {pct(b_unrel)}")

    print(
        f"\n{'rule (hybrid search)':30} {'params':>14} {'threshold':>9} | fitted rel / unrel"
        f" | held-out (LOO) rel / unrel"
    )
    evaluations = []
    for family in FAMILIES:
        ev = evaluate(family, rows, "hybrid")
        evaluations.append(ev)
        fit, (fr, fu), (lr, lu) = ev["fitted"], ev["fitted_rates"], ev["loo_rates"]
        params = ",".join(f"{p:g}" for p in fit.params) or "-"
        print(
            f"{family.name:30} {params:>14} {fit.threshold:9.4f} | {pct(fr)} / {pct(fu)}"
            f"    | {pct(lr)} / {pct(lu)}"
        )

    # The chosen rule: best held-out worse rate, then held-out sum, then fitted; then simpler.
    chosen = max(
        evaluations,
        key=lambda e: (
            min(e["loo_rates"]),
            sum(e["loo_rates"]),
            min(e["fitted_rates"]),
            -evaluations.index(e),
        ),
    )
    fam, fit = chosen["family"], chosen["fitted"]
    print(
        f"\nchosen: {fam.name}: {fam.formula}; params {fit.params}; threshold {fit.threshold:.4f}"
    )

    # The same rule when vectors are unavailable (the hook's --fallback fts-only).
    rel = fam.make(*fit.params)
    fts_ok = [success(r, injected(r["fts"], rel, fit.threshold)) for r in rows]
    fr, fu = rates(rows, fts_ok)
    print(
        f"same rule, same threshold, on --fts-only results: relevant {pct(fr)}, unrelated {pct(fu)}"
    )

    print("\nfailures of the chosen rule (fitted):")
    for row, ok, loo_ok in zip(rows, fit.ok, chosen["loo_ok"], strict=True):
        if ok and loo_ok:
            continue
        res = row["hybrid"]
        top = res[0] if res else None
        kept = injected(res, rel, fit.threshold)
        where = next(
            (i + 1 for i, x in enumerate(res) if x["source"]["path"] == row["expect"]), None
        )
        desc = (
            f"top={top['source']['path']} sim={sim(top)} cov={cov(top):.2f} rel={rel(top, res):.3f}"
            if top
            else "no results"
        )
        exp = f" expected rank={where}" if row["expect"] else ""
        tag = "fit+loo" if not ok else "loo only"
        print(
            f"  [{tag}] {row['id']} ({row['lang']}) kept={len(kept)}{exp}: {row['prompt'][:70]!r}\n"
            f"      {desc}"
        )
    return {"family": fam.name, "params": list(fit.params), "threshold": fit.threshold}


def print_cue_table(rows: list[dict[str, Any]]) -> None:
    print(
        "\nper prompt: top-hit similarity, best similarity, best coverage, margin (best - lowest"
        " similarity), gap (best - second best), lift (top - vault mean), expected rank"
    )
    for row in rows:
        res = row["hybrid"]
        sims = [s for s in map(sim, res) if s is not None]
        f = floor_sim(res)
        where = next(
            (i + 1 for i, x in enumerate(res) if x["source"]["path"] == row["expect"]), "-"
        )
        top = res[0] if res else {}
        s1, b1 = sim(top), bg(top)
        lift = s1 - b1 if s1 is not None and b1 is not None else 0.0
        margin = max(sims) - f if sims and f is not None else 0.0
        gap = sims and sorted(sims)[-1] - (sorted(sims)[-2] if len(sims) > 1 else 0.0) or 0.0
        print(
            f"  {row['id']} sim1={s1!s:>6} maxsim={max(sims, default=0):.4f}"
            f" maxcov={max(map(cov, res), default=0):.2f} margin={margin:.4f} gap={gap:.4f}"
            f" lift1={lift:.4f} rank={where} {row['prompt'][:60]!r}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--offline", action="store_true", help=f"re-evaluate {CACHE.name}")
    parser.add_argument("--tsm", type=Path, default=ROOT / ".venv" / "bin" / "tsm")
    parser.add_argument("--cues", action="store_true", help="print every prompt's cues")
    parser.add_argument("--no-e2e", action="store_true", help="skip the final end-to-end hook run")
    args = parser.parse_args()
    started = time.perf_counter()
    tsm = args.tsm.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="tsm-abstention-"))
    state = tmp / "state"
    try:
        if args.offline:
            rows = json.loads(CACHE.read_text(encoding="utf-8"))["rows"]
        else:
            rows = collect(tsm, state)
            CACHE.write_text(
                json.dumps({"rows": rows}, ensure_ascii=False, indent=1), encoding="utf-8"
            )
        prepare(rows)
        if args.cues:
            print_cue_table(rows)
        chosen = report(rows)
        if not args.offline and not args.no_e2e:
            spec = {"family": chosen["family"], "params": chosen["params"]}
            e2e = end_to_end(rows, tsm, state, spec, chosen["threshold"])
            ok = [
                not e["injected"]
                if r["expect"] is None
                else r["expect"] in e["paths"][:RELEVANT_RANKS]
                for r, e in zip(rows, e2e, strict=True)
            ]
            rel, unrel = rates(rows, ok)
            ms = statistics.median(e["ms"] for e in e2e)
            print(
                f"\nend to end (real hook, TSM_INJECT_MIN_SCORE={chosen['threshold']:.4f}, "
                f"score := relevance): relevant {pct(rel)}, unrelated {pct(unrel)}; "
                f"hook p50 {ms:.0f} ms (warm daemon, 31 notes)"
            )
            data = json.loads(CACHE.read_text(encoding="utf-8"))
            data.update({"chosen": chosen, "end_to_end": e2e})
            CACHE.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    finally:
        if state.exists():
            subprocess.run(
                [str(tsm), "stop"],
                env=tsm_env(state, tsm),
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\ntook {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
