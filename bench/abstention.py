"""Abstention of the UserPromptSubmit hook: does it inject the right note when the prompt is
about the notes, and nothing when it is not?

    bench/abstention/vault/           31 personal notes, English and Japanese
    bench/abstention/prompts.jsonl    calibration set: 38 prompts about one note ("expect":
                                      its path) and 38 ordinary coding requests ("expect": null)
    bench/abstention/holdout.jsonl    held-out set, written later and never tuned on:
                                      30 about a note, 30 ordinary requests

Everything goes through the real programs: `tsm index` into a temp state dir, a warm daemon,
and the real hook (plugin/hooks/user_prompt_submit.py) fed the JSON Claude Code sends, its
output parsed as Claude Code would. The hook keeps a hit when its `relevance` (cosine minus
the prompt's best cosine with a generic request, search/relevance.py) is at least
TSM_INJECT_MIN_RELEVANCE, or its keyword `coverage` at least TSM_INJECT_MIN_COVERAGE.

Rates: relevant = prompts whose expected note is among the first 3 injected results;
unrelated = prompts with no injection at all. The two floors are then swept offline over the
searches the hook made (calibration set, with leave-one-out), to show where the defaults sit.

    .venv/bin/python bench/abstention.py            # ~2 min; writes bench/abstention/results.txt
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "abstention"
VAULT = HERE / "vault"
SETS = {"calibration": HERE / "prompts.jsonl", "held-out": HERE / "holdout.jsonl"}
HOOK = ROOT / "plugin" / "hooks" / "user_prompt_submit.py"
RELEVANT_RANKS = 3
TOP_K = 5  # the hook's default TSM_INJECT_TOP_K
RELEVANCE_GRID = [round(x * 0.0025, 4) for x in range(-12, 13)]
COVERAGE_GRID = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01]  # 1.01: the coverage clause off

Row = dict[str, Any]
sys.path.insert(0, str(HOOK.parent))
from user_prompt_submit import (  # noqa: E402 - the hook's own rule and query cut
    DEFAULT_MIN_COVERAGE,
    DEFAULT_MIN_RELEVANCE,
    build_query,
    is_relevant,
)


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
        return {"paths": [], "ms": ms}
    xml = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return {
        "paths": [r.findtext("source") or "" for r in ET.fromstring(xml).findall("result")],
        "ms": ms,
    }


def load(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def collect(tsm: Path, env: dict[str, str], rows: list[Row]) -> None:
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
        row["hybrid"] = run_tsm(tsm, base, env)["results"]
        row["fts"] = run_tsm(tsm, [*base, "--fts-only"], env)["results"]
        row["hook"] = run_hook(row["prompt"], env, f"abstention-{row['id']}")


def success(row: Row, injected: list[str]) -> bool:
    if row["expect"] is None:
        return not injected
    return row["expect"] in injected[:RELEVANT_RANKS]


def rates(rows: list[Row], ok: list[bool]) -> tuple[float, float]:
    rel = [o for r, o in zip(rows, ok, strict=True) if r["expect"] is not None]
    unrel = [o for r, o in zip(rows, ok, strict=True) if r["expect"] is None]
    return sum(rel) / max(len(rel), 1), sum(unrel) / max(len(unrel), 1)


def kept(results: list[Row], min_relevance: float, min_coverage: float) -> list[str]:
    return [r["source"]["path"] for r in results if is_relevant(r, min_relevance, min_coverage)]


def offline(rows: list[Row], key: str, relevance: float, coverage: float) -> list[bool]:
    return [success(r, kept(r[key], relevance, coverage)) for r in rows]


def fit(rows: list[Row], skip: int = -1) -> tuple[float, float]:
    """The floors maximising the worse of the two rates (ties: the sum, then the defaults)."""
    train = [r for i, r in enumerate(rows) if i != skip]

    def quality(cell: tuple[float, float]) -> tuple[float, float, float]:
        a, b = rates(train, offline(train, "hybrid", *cell))
        near = -abs(cell[0] - DEFAULT_MIN_RELEVANCE) - abs(cell[1] - DEFAULT_MIN_COVERAGE)
        return min(a, b), a + b, near

    return max(((x, c) for x in RELEVANCE_GRID for c in COVERAGE_GRID), key=quality)


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def report(sets: dict[str, list[Row]], lines: list[str]) -> None:
    say = lines.append
    for name, rows in sets.items():
        n_rel = sum(r["expect"] is not None for r in rows)
        ceiling = sum(
            r["expect"] in [x["source"]["path"] for x in r["hybrid"][:RELEVANT_RANKS]]
            for r in rows
            if r["expect"] is not None
        )
        hook_ok = [success(r, r["hook"]["paths"]) for r in rows]
        rel, unrel = rates(rows, hook_ok)
        fts_rel, fts_unrel = rates(
            rows, offline(rows, "fts", DEFAULT_MIN_RELEVANCE, DEFAULT_MIN_COVERAGE)
        )
        say(f"\n## {name} set: {n_rel} about a note, {len(rows) - n_rel} unrelated")
        say(
            f"search ceiling: expected note in the top {RELEVANT_RANKS} for {ceiling}/{n_rel} "
            f"({pct(ceiling / max(n_rel, 1))})"
        )
        say(
            f"real hook, defaults (min relevance {DEFAULT_MIN_RELEVANCE}, min coverage "
            f"{DEFAULT_MIN_COVERAGE}): relevant {pct(rel)}, unrelated {pct(unrel)}; hook p50 "
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
                    if x["source"]["path"] == row["expect"]
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
    calibration = sets["calibration"]
    best = fit(calibration)
    loo = [offline([r], "hybrid", *fit(calibration, skip=i))[0] for i, r in enumerate(calibration)]
    say("\n## floors swept offline over the hook's searches")
    say(
        f"best on the calibration set: min relevance {best[0]}, min coverage {best[1]}: "
        f"{' / '.join(map(pct, rates(calibration, offline(calibration, 'hybrid', *best))))}; "
        f"leave-one-out {' / '.join(map(pct, rates(calibration, loo)))}"
    )
    for name, rows in sets.items():
        say(f"{name}: relevant / unrelated by min relevance (min coverage {DEFAULT_MIN_COVERAGE}):")
        say(
            "  "
            + "  ".join(
                f"{x:+.4f}: {'/'.join(pct(v).strip() for v in rates(rows, offline(rows, 'hybrid', x, DEFAULT_MIN_COVERAGE)))}"  # noqa: E501
                for x in RELEVANCE_GRID[6:19:2]
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tsm", type=Path, default=ROOT / ".venv" / "bin" / "tsm")
    parser.add_argument("--out", type=Path, default=HERE / "results.txt")
    args = parser.parse_args()
    tsm = args.tsm.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="tsm-abstention-"))
    env = tsm_env(tmp / "state", tsm)
    lines = [f"# abstention ({time.strftime('%Y-%m-%d')}, `python bench/abstention.py`)"]
    try:
        started = time.perf_counter()
        index = run_tsm(tsm, ["index", "-f", "json"], env)
        lines.append(
            f"indexed {index['indexed']} notes, {index['chunks']} chunks in "
            f"{time.perf_counter() - started:.1f} s"
        )
        run_tsm(tsm, ["start"], env)
        sets = {name: load(path) for name, path in SETS.items()}
        for rows in sets.values():
            collect(tsm, env, rows)
        report(sets, lines)
    finally:
        subprocess.run([str(tsm), "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
