"""Abstention of the UserPromptSubmit hook: does it inject the right note when the prompt is
about the notes, and nothing when it is not?

    bench/abstention/vault/           31 personal notes, English and Japanese
    bench/abstention/prompts.jsonl    calibration set: 38 prompts about one note ("expect":
                                      its path) and 38 ordinary coding requests ("expect": null)
    bench/abstention/holdout.jsonl    held-out set, written later and never tuned on:
                                      30 about a note, 30 ordinary requests
    bench/abstention/docs-prompts.jsonl
                                      the second vault (bench/abstention_docs.py: 396 files
                                      of real documentation, Japanese and English, fetched
                                      from pinned packages): 58 prompts about it ("expect":
                                      the note, or the notes, that answer) and 58 ordinary
                                      requests, a part of them sharing words with the docs
                                      ("shares_words"); each row is in the "tune" or the
                                      "held-out" half ("split")

Everything goes through the real programs: `tsm index` into a temp state dir, a warm daemon,
and the real hook (plugin/hooks/user_prompt_submit.py) fed the JSON Claude Code sends, its
output parsed as Claude Code would. The hook keeps a hit when its `relevance` (cosine minus
the prompt's best cosine with a generic request, search/relevance.py) is at least
TSM_INJECT_MIN_RELEVANCE and at least the vault's noise level (`noise`: the relevance only
1 % of the generic requests reach against this vault), or its keyword `coverage` at least
TSM_INJECT_MIN_COVERAGE and, while the prompt is not well inside the generic requests, the
noise level too. The noise level is waived when the prompt vouches for the hit: it names two
words of the hit's path that no generic request uses (`distinct_names`), or it names the hit
by a word of its path (`named`) or its keywords cover the hit, while the vector ranking
singles a few notes out (`vector_drop` at least the hook's min_drop, 0.3).

Rates: relevant = prompts whose expected note is among the first 3 injected results;
unrelated = prompts with no injection at all; duplicates = injections holding two results of
the same text. The two floors are then swept offline over the searches the hook made (the
calibration set and the docs vault's tune half, with leave-one-out), to show where the
defaults sit.

    .venv/bin/python bench/abstention.py --vault personal   # ~2 min; bench/abstention/results.txt
    .venv/bin/python bench/abstention.py --vault docs       # bench/results/abstention-docs.md
    .venv/bin/python bench/abstention.py --joint-fit        # bench/results/abstention-fit.md
        (the first run fetches the docs and embeds them, ~15 min on 2 busy cores; the index
        is kept in bench/.cache/abstention-docs/state and updated by later runs)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "abstention"
HOOK = ROOT / "plugin" / "hooks" / "user_prompt_submit.py"
CACHE = ROOT / "bench" / ".cache"
RELEVANT_RANKS = 3
TOP_K = 5  # the hook's default TSM_INJECT_TOP_K
RELEVANCE_GRID = [round(x * 0.0025, 4) for x in range(-12, 13)]
DROP_GRID = [round(0.1 + x * 0.025, 3) for x in range(17)]  # 0.1 .. 0.5: the hook's min_drop
COVERAGE_GRID = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01]  # 1.01: the coverage clause off

Row = dict[str, Any]
sys.path.insert(0, str(HOOK.parent))
sys.path.insert(0, str(ROOT / "bench"))
from user_prompt_submit import (  # noqa: E402 - the hook's own rule and query cut
    COVERAGE_MIN_RELEVANCE,
    DEFAULT_MIN_COVERAGE,
    DEFAULT_MIN_DROP,
    DEFAULT_MIN_RELEVANCE,
    build_query,
    select_results,
)


@dataclass
class Vault:
    name: str
    root: Path
    sets: dict[str, list[Row]]  # the first set is the one the floors are fitted on
    state: Path | None  # a kept state dir (its index is reused), or None for a temp one
    out: Path


def personal_vault() -> Vault:
    sets = {
        "calibration": load(HERE / "prompts.jsonl"),
        "held-out": load(HERE / "holdout.jsonl"),
    }
    return Vault("personal", HERE / "vault", sets, None, HERE / "results.txt")


def docs_vault() -> Vault:
    from abstention_docs import VAULT, ensure_vault

    ensure_vault()
    rows = load(HERE / "docs-prompts.jsonl")
    sets = {half: [r for r in rows if r["split"] == half] for half in ("tune", "held-out")}
    state = CACHE / "abstention-docs" / "state"
    return Vault("docs", VAULT, sets, state, ROOT / "bench" / "results" / "abstention-docs.md")


def tsm_env(vault: Vault, state: Path, tsm: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env.update(
        {
            "TSM_INDEX_ROOT": str(vault.root),
            "TSM_STATE_DIR": str(state),
            "TSM_NO_USER_CONFIG": "1",
            "TSM_BIN": str(tsm),
            # a run paused by another job (SIGSTOP) must not turn a slow search into a
            # silent hook: the hook stays silent when tsm outlives its timeout
            "TSM_HOOK_TIMEOUT": "600",
        }
    )
    return env


def run_tsm(tsm: Path, args: list[str], env: dict[str, str], cwd: Path) -> Any:
    done = subprocess.run(
        [str(tsm), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(f"tsm {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return json.loads(done.stdout)


def run_hook(
    prompt: str, env: dict[str, str], session: str, cwd: Path, hook: Path = HOOK
) -> dict[str, Any]:
    """Feed the hook the JSON Claude Code sends; parse its stdout as Claude Code would."""
    payload = {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(hook)],
        input=json.dumps(payload),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    ms = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"hook exited {done.returncode}: {done.stderr}")
    if not done.stdout.strip():
        return {"paths": [], "ms": ms}
    xml = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return {
        "paths": [r.findtext("source") or "" for r in ET.fromstring(xml).findall("result")],
        "ms": ms,
    }


def load(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def collect(tsm: Path, env: dict[str, str], rows: list[Row], cwd: Path, hook: Path) -> None:
    for row in rows:
        query = build_query(row["prompt"])
        base = [
            "search",
            "-f",
            "json",
            "-k",
            str(TOP_K),
            "--fallback",
            "fts-only",
            f"--query={query}",
        ]
        row["hybrid"] = run_tsm(tsm, base, env, cwd)["results"]
        row["fts"] = run_tsm(tsm, [*base, "--fts-only"], env, cwd)["results"]
        row["hook"] = run_hook(row["prompt"], env, f"abstention-{row['id']}", cwd, hook)


def expected(row: Row) -> list[str]:
    """The notes that answer the prompt (any of them counts); none for an unrelated one."""
    expect = row["expect"]
    return [] if expect is None else [expect] if isinstance(expect, str) else list(expect)


def success(row: Row, injected: list[str]) -> bool:
    if row["expect"] is None:
        return not injected
    return any(path in injected[:RELEVANT_RANKS] for path in expected(row))


def duplicates(root: Path, injected: list[str]) -> int:
    """How many injected results repeat the text of one injected above them."""
    seen: set[str] = set()
    repeats = 0
    for path in injected:
        try:
            digest = hashlib.sha256((root / path).read_bytes()).hexdigest()
        except OSError:
            continue
        repeats += digest in seen
        seen.add(digest)
    return repeats


def rates(rows: list[Row], ok: list[bool]) -> tuple[float, float]:
    rel = [o for r, o in zip(rows, ok, strict=True) if r["expect"] is not None]
    unrel = [o for r, o in zip(rows, ok, strict=True) if r["expect"] is None]
    return sum(rel) / max(len(rel), 1), sum(unrel) / max(len(unrel), 1)


def kept(
    results: list[Row], min_relevance: float, min_coverage: float, min_drop: float
) -> list[str]:
    chosen = select_results(results, min_relevance, min_coverage, min_drop=min_drop)
    return [r["source"]["path"] for r in chosen]


def offline(
    rows: list[Row], key: str, relevance: float, coverage: float, drop: float = DEFAULT_MIN_DROP
) -> list[bool]:
    return [success(r, kept(r[key], relevance, coverage, drop)) for r in rows]


def before(rows: list[Row]) -> list[bool]:
    """The hook's rule before `vector_drop` (commit 9e772ab), at its floors: a hit the prompt
    names by a word of its path needs only the relevance floor, and the keyword-coverage
    route ignores the noise level."""

    def keep(hit: Row) -> bool:
        b = hit["score_breakdown"]
        rel, cov, noise = b.get("relevance"), b.get("coverage"), b.get("noise")
        floor = DEFAULT_MIN_RELEVANCE
        if noise is not None and b.get("named") is not True:
            floor = max(floor, noise)
        if rel is not None and rel >= floor:
            return True
        return (
            cov is not None
            and cov >= DEFAULT_MIN_COVERAGE
            and (rel is None or rel >= COVERAGE_MIN_RELEVANCE)
        )

    return [success(r, [h["source"]["path"] for h in r["hybrid"] if keep(h)]) for r in rows]


def drop_fit(sets: dict[str, list[Row]]) -> float:
    """The hook's min_drop maximising the worst of the rates over `sets` at the default
    floors (ties: their sum, then nearness to the default)."""

    def quality(drop: float) -> tuple[float, float, float]:
        all_rates = [
            x
            for rows in sets.values()
            for x in rates(
                rows,
                offline(rows, "hybrid", DEFAULT_MIN_RELEVANCE, DEFAULT_MIN_COVERAGE, drop),
            )
        ]
        return min(all_rates), sum(all_rates), -abs(drop - DEFAULT_MIN_DROP)

    return max(DROP_GRID, key=quality)


def fit(rows: list[Row], skip: int = -1) -> tuple[float, float]:
    """The floors maximising the worse of the two rates (ties: the sum, then the defaults)."""
    train = [r for i, r in enumerate(rows) if i != skip]

    def quality(cell: tuple[float, float]) -> tuple[float, float, float]:
        a, b = rates(train, offline(train, "hybrid", *cell))
        near = -abs(cell[0] - DEFAULT_MIN_RELEVANCE) - abs(cell[1] - DEFAULT_MIN_COVERAGE)
        return min(a, b), a + b, near

    return max(((x, c) for x in RELEVANCE_GRID for c in COVERAGE_GRID), key=quality)


def joint_fit(tuned: dict[str, list[Row]]) -> tuple[float, float]:
    """The floors maximising the worst of the rates over several sets (each vault's tune
    set), ties broken by their sum, then by nearness to the defaults."""

    def quality(cell: tuple[float, float]) -> tuple[float, float, float]:
        all_rates = [
            x for rows in tuned.values() for x in rates(rows, offline(rows, "hybrid", *cell))
        ]
        near = -abs(cell[0] - DEFAULT_MIN_RELEVANCE) - abs(cell[1] - DEFAULT_MIN_COVERAGE)
        return min(all_rates), sum(all_rates), near

    return max(((x, c) for x in RELEVANCE_GRID for c in COVERAGE_GRID), key=quality)


def joint_report(out: Path) -> None:
    """Refit the floors over both vaults' tune sets from the searches the last runs saved
    (bench/.cache/abstention-*.json), and show every set at the fitted floors."""
    saved = {}
    for vault, first in (("personal", "calibration"), ("docs", "tune")):
        path = CACHE / f"abstention-{vault}.json"
        if not path.exists():
            raise SystemExit(f"no saved searches in {path}: run --vault {vault} first")
        for name, rows in json.loads(path.read_text(encoding="utf-8")).items():
            saved[(vault, name, name == first)] = rows
    tuned = {f"{v}/{n}": rows for (v, n, t), rows in saved.items() if t}
    best = joint_fit(tuned)
    lines = [
        f"# abstention floors fitted on both vaults' tune sets ({time.strftime('%Y-%m-%d')}, "
        "`python bench/abstention.py --joint-fit`)",
        f"tuned on: {', '.join(tuned)}; fitted: min relevance {best[0]}, min coverage {best[1]} "
        f"(the hook's defaults: {DEFAULT_MIN_RELEVANCE}, {DEFAULT_MIN_COVERAGE})",
        "",
        "| set | tuned on | relevant / unrelated at the fitted floors |",
        "|---|---|---|",
    ]
    for (vault, name, tune), rows in saved.items():
        rel, unrel = rates(rows, offline(rows, "hybrid", *best))
        lines.append(f"| {vault}/{name} | {'yes' if tune else 'no'} | {pct(rel)} / {pct(unrel)} |")
    lines.append("")
    lines.append("relevant / unrelated by min relevance (min coverage at the fitted value):")
    for (vault, name, _), rows in saved.items():
        cells = "  ".join(
            f"{x:+.4f}: {'/'.join(pct(v).strip() for v in rates(rows, offline(rows, 'hybrid', x, best[1])))}"  # noqa: E501
            for x in RELEVANCE_GRID[6:19]
        )
        lines.append(f"- {vault}/{name}: {cells}")
    lines += ["", "## candidate rules, relevant / unrelated at the fitted floors", ""]
    lines.append("| rule | " + " | ".join(f"{v}/{n}" for v, n, _ in saved) + " |")
    lines.append("|---" * (len(saved) + 1) + "|")
    for label, rule in RULES.items():
        cells = []
        for rows in saved.values():
            if rule == "before":  # at the defaults: the old rule is not the hook's to refit
                cells.append(" / ".join(pct(x) for x in rates(rows, before(rows))))
                continue
            changed = variant(rows, rule)
            cells.append(
                " / ".join(pct(x) for x in rates(changed, offline(changed, "hybrid", *best)))
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"## the hook's min_drop (default {DEFAULT_MIN_DROP}) at the default floors",
        "",
        "relevant / unrelated by min_drop:",
    ]
    for (vault, name, _), rows in saved.items():
        cells = "  ".join(
            f"{d:.3f}: "
            + "/".join(
                pct(v).strip()
                for v in rates(
                    rows, offline(rows, "hybrid", DEFAULT_MIN_RELEVANCE, DEFAULT_MIN_COVERAGE, d)
                )
            )
            for d in DROP_GRID[::2]
        )
        lines.append(f"- {vault}/{name}: {cells}")
    lines += ["", "leave one set out: min_drop fitted on the other three sets:", ""]
    for (vault, name, _), rows in saved.items():
        others = {f"{v}/{n}": r for (v, n, _), r in saved.items() if (v, n) != (vault, name)}
        drop = drop_fit(others)
        got = rates(
            rows, offline(rows, "hybrid", DEFAULT_MIN_RELEVANCE, DEFAULT_MIN_COVERAGE, drop)
        )
        lines.append(f"- {vault}/{name}: fitted {drop}: {' / '.join(pct(x) for x in got)}")
    lines += [
        "",
        "## leave one set out: floors fitted on the other three sets (the hook's rule)",
        "",
    ]
    for (vault, name, _), rows in saved.items():
        others = {f"{v}/{n}": r for (v, n, _), r in saved.items() if (v, n) != (vault, name)}
        cell = joint_fit(others)
        lines.append(
            f"- {vault}/{name}: fitted {cell[0]}, {cell[1]}: "
            f"{' / '.join(pct(x) for x in rates(rows, offline(rows, 'hybrid', *cell)))}"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    out.write_text(text, encoding="utf-8")


# What the hook's decision would be with parts of its evidence left out (the offline sweep of
# candidates): "floor" ignores the vault's noise level (the first rule), "noise" applies it to
# every hit, "before" is the rule of commit 9e772ab (a word of the path alone exempts a hit,
# and keyword coverage ignores the level; shown at the default floors), "no-distinct" the
# hook's without `distinct_names`, "hook" the hook's own.
RULES = {
    "relevance floor only (first rule)": "floor",
    "noise level for every hit": "noise",
    "noise level unless the prompt names the hit's path (before; default floors)": "before",
    "noise level unless the prompt names the hit and the vectors single notes out": ("no-distinct"),
    "same, or the prompt names two path words no generic request uses (the hook)": "hook",
}


def variant(rows: list[Row], rule: str) -> list[Row]:
    def change(hit: Row) -> Row:
        breakdown = dict(hit["score_breakdown"])
        if rule == "floor":
            breakdown["noise"] = None
        elif rule == "noise":  # nothing vouches for a hit
            breakdown.update(named=False, distinct_names=0, vector_drop=0.0)
        elif rule == "no-distinct":
            breakdown["distinct_names"] = None
        return {**hit, "score_breakdown": breakdown}

    return [{**r, "hybrid": [change(h) for h in r["hybrid"]]} for r in rows]


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def report(vault: Vault, lines: list[str]) -> None:
    say = lines.append
    for name, rows in vault.sets.items():
        n_rel = sum(r["expect"] is not None for r in rows)
        ceiling = sum(
            success(r, [x["source"]["path"] for x in r["hybrid"]]) for r in rows if expected(r)
        )
        hook_ok = [success(r, r["hook"]["paths"]) for r in rows]
        rel, unrel = rates(rows, hook_ok)
        fts_rel, fts_unrel = rates(
            rows, offline(rows, "fts", DEFAULT_MIN_RELEVANCE, DEFAULT_MIN_COVERAGE)
        )
        dupes = sum(duplicates(vault.root, r["hook"]["paths"]) > 0 for r in rows)
        shares = [ok for r, ok in zip(rows, hook_ok, strict=True) if r.get("shares_words")]
        say(f"\n## {name} set: {n_rel} about a note, {len(rows) - n_rel} unrelated")
        say(
            f"search ceiling: expected note in the top {RELEVANT_RANKS} for {ceiling}/{n_rel} "
            f"({pct(ceiling / max(n_rel, 1))})"
        )
        noise = {h["score_breakdown"].get("noise") for r in rows for h in r["hybrid"]} - {None}
        say(
            f"vault noise level (relevance 1 % of the generic requests reach here; a hit the "
            f"prompt does not vouch for must reach it): "
            f"{', '.join(map(str, sorted(noise))) or 'none'}"
        )
        say(
            f"real hook, defaults (min relevance {DEFAULT_MIN_RELEVANCE}, min coverage "
            f"{DEFAULT_MIN_COVERAGE}): relevant {pct(rel)}, unrelated {pct(unrel)}"
            + (f" (sharing words with the notes: {sum(shares)}/{len(shares)})" if shares else "")
            + f"; injections with a duplicate text: {dupes}; hook p50 "
            f"{statistics.median(r['hook']['ms'] for r in rows):.0f} ms"
        )
        say(
            f"same floors on --fts-only results (vectors unavailable): relevant {pct(fts_rel)}, "
            f"unrelated {pct(fts_unrel)}"
        )
        for row, ok in zip(rows, hook_ok, strict=True):
            if ok:
                continue
            top = row["hybrid"][0] if row["hybrid"] else None
            rank = next(
                (
                    i + 1
                    for i, x in enumerate(row["hybrid"])
                    if x["source"]["path"] in expected(row)
                ),
                None,
            )
            cue = (
                (
                    f"top {top['source']['path']} relevance {top['score_breakdown']['relevance']}"
                    f" coverage {top['score_breakdown']['coverage']}"
                )
                if top
                else "no hits"
            )
            what = (
                f"expected rank {rank}, injected {row['hook']['paths'][:3]}"
                if row["expect"]
                else f"injected {row['hook']['paths'][:3]}"
            )
            say(f"  miss {row['id']}: {what}; {cue}; {row['prompt'][:70]!r}")
    first, fitted = next(iter(vault.sets.items()))
    best = fit(fitted)
    loo = [offline([r], "hybrid", *fit(fitted, skip=i))[0] for i, r in enumerate(fitted)]
    say("\n## floors swept offline over the hook's searches")
    say(
        f"best on the {first} set: min relevance {best[0]}, min coverage {best[1]}: "
        f"{' / '.join(map(pct, rates(fitted, offline(fitted, 'hybrid', *best))))}; "
        f"leave-one-out {' / '.join(map(pct, rates(fitted, loo)))}"
    )
    for name, rows in vault.sets.items():
        say(f"{name}: relevant / unrelated by min relevance (min coverage {DEFAULT_MIN_COVERAGE}):")
        say(
            "  "
            + "  ".join(
                f"{x:+.4f}: {'/'.join(pct(v).strip() for v in rates(rows, offline(rows, 'hybrid', x, DEFAULT_MIN_COVERAGE)))}"  # noqa: E501
                for x in RELEVANCE_GRID[6:19:2]
            )
        )


def run(vault: Vault, tsm: Path, hook: Path) -> list[str]:
    tmp = Path(tempfile.mkdtemp(prefix="tsm-abstention-"))
    state = vault.state or tmp / "state"
    state.mkdir(parents=True, exist_ok=True)
    env = tsm_env(vault, state, tsm)
    lines = [
        f"# abstention, {vault.name} vault ({time.strftime('%Y-%m-%d')}, "
        f"`python bench/abstention.py --vault {vault.name}`)"
    ]
    try:
        started = time.perf_counter()
        index = run_tsm(tsm, ["index", "-f", "json"], env, vault.root)
        lines.append(
            f"indexed {index['indexed']} notes, {index['chunks']} chunks in "
            f"{time.perf_counter() - started:.1f} s"
        )
        run_tsm(tsm, ["start"], env, vault.root)
        for rows in vault.sets.values():
            collect(tsm, env, rows, vault.root, hook)
        report(vault, lines)
    finally:
        subprocess.run([str(tsm), "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    raw = CACHE / f"abstention-{vault.name}.json"  # every search, for offline analysis
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(vault.sets, ensure_ascii=False), encoding="utf-8")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tsm", type=Path, default=ROOT / ".venv" / "bin" / "tsm")
    parser.add_argument("--vault", choices=("personal", "docs", "both"), default="both")
    parser.add_argument(
        "--hook", type=Path, default=HOOK, help="another hook script (e.g. an older version)"
    )
    parser.add_argument("--out", type=Path, help="write the report here instead")
    parser.add_argument(
        "--joint-fit",
        action="store_true",
        help="only refit the floors over both vaults' saved searches (no tsm run)",
    )
    args = parser.parse_args()
    if args.joint_fit:
        joint_report(args.out or ROOT / "bench" / "results" / "abstention-fit.md")
        return
    tsm = args.tsm.resolve()
    names = ("personal", "docs") if args.vault == "both" else (args.vault,)
    for name in names:
        vault = personal_vault() if name == "personal" else docs_vault()
        text = "\n".join(run(vault, tsm, args.hook.resolve())) + "\n"
        print(text)
        (args.out or vault.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
