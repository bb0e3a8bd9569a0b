"""Does the prompt hook inject the note the search ranks first when that note answers the
prompt, and nothing when the prompt is unrelated to the vault? Fitted and checked on several
vaults of different kinds, with leave-one-vault-out (bench/abstention/SOURCES.md):

    personal   31 personal notes, English and Japanese   prompts.jsonl + holdout.jsonl
    docs       396 files of public documentation, en/ja  docs-prompts.jsonl (abstention_docs.py)
    seed       the prompt-format spec's seed vault (9)   seed-prompts.jsonl
    nodejs     Node.js's contributor guides (60), en     nodejs-prompts.jsonl

Each vault is indexed by the real `tsm index` into a kept state dir (bench/.cache/
abstention-NAME/state). Then, in this process, the core answers every prompt as the hook's
`tsm context` does: `LocalKnowledge.search` with the request `find_context` makes, and
`core.context.decide` under each candidate policy, so the thresholds are fitted on the very
code the hook runs. The chosen defaults are then checked end to end: the real `tsm context`
fed the hook's JSON on stdin, its XML parsed as Claude Code would.

Rates:
    first   among prompts about the vault whose first search hit is an expected note, the
            share that get that hit injected (the issue's goal: >= 85 %)
    silent  among unrelated prompts, the share that get no note injected (goal: >= 95 %)

    .venv/bin/python bench/abstention.py            # bench/results/abstention-vaults.md
    .venv/bin/python bench/abstention.py --vault seed --vault nodejs   # a subset, no fit
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "abstention"
CACHE = ROOT / "bench" / ".cache"
OUT = ROOT / "bench" / "results" / "abstention-vaults.md"
NODEJS_DOCS = Path("/usr/share/doc/nodejs")
sys.path.insert(0, str(ROOT / "bench"))

from tsm.config import load as load_settings  # noqa: E402
from tsm.core.context import (  # noqa: E402 - the hook's own code, in tsm
    Injection,
    Policy,
    build_query,
    decide,
    select_results,
)
from tsm.core.knowledge import LocalKnowledge  # noqa: E402
from tsm.core.request import SearchRequest  # noqa: E402
from tsm.render.json_format import search_to_dict  # noqa: E402

Row = dict[str, Any]
GOAL_FIRST, GOAL_SILENT = 0.85, 0.95
GRID = {
    "min_relevance": [round(-0.03 + 0.005 * i, 4) for i in range(9)],  # -0.03 .. +0.01
    "min_coverage": [0.5, 0.6, 0.8, 1.01],  # 1.01: the coverage clause off
    "coverage_min_relevance": [-0.06, -0.05, -0.04, -0.03, -0.02],
    "min_drop": [0.2, 0.3, 0.4],
}


@dataclass
class Vault:
    name: str
    kind: str
    root: Path
    rows: list[Row]

    @property
    def state(self) -> Path:
        return CACHE / f"abstention-{self.name}" / "state"


def load_rows(*names: str) -> list[Row]:
    rows: list[Row] = []
    for name in names:
        with open(HERE / name, encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    return rows


def nodejs_vault() -> Path:
    """Node.js's contributor guides as a vault: the top-level guides but the changelog, and
    contributing/ (the API reference and changelogs/ stay out: days of embedding here)."""
    vault = CACHE / "abstention-nodejs" / "vault"
    if vault.is_dir():
        return vault
    if not NODEJS_DOCS.is_dir():
        raise SystemExit(f"{NODEJS_DOCS} is missing: install the nodejs package")
    picked = [p for p in NODEJS_DOCS.glob("*.md") if p.name != "CHANGELOG.md"]
    picked += NODEJS_DOCS.glob("contributing/**/*.md")
    for path in picked:
        target = vault / path.relative_to(NODEJS_DOCS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return vault


def vaults() -> dict[str, Callable[[], Vault]]:
    def docs() -> Vault:
        from abstention_docs import VAULT, ensure_vault

        ensure_vault()
        return Vault("docs", "documentation, en/ja", VAULT, load_rows("docs-prompts.jsonl"))

    return {
        "personal": lambda: Vault(
            "personal",
            "personal notes, en/ja",
            HERE / "vault",
            load_rows("prompts.jsonl", "holdout.jsonl"),
        ),
        "docs": docs,
        "seed": lambda: Vault(
            "seed",
            "notes, ja/en",
            ROOT / "tests" / "fixtures" / "seed-example",
            load_rows("seed-prompts.jsonl"),
        ),
        "nodejs": lambda: Vault(
            "nodejs", "developer docs, en", nodejs_vault(), load_rows("nodejs-prompts.jsonl")
        ),
    }


def environ(vault: Vault) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSM_")}
    env |= {
        "TSM_INDEX_ROOT": str(vault.root),
        "TSM_STATE_DIR": str(vault.state),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_AUTOSTART": "0",
    }
    return env


def index(vault: Vault) -> str:
    """`tsm index` of the vault into its kept state dir (a no-op when nothing changed)."""
    vault.state.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "tsm"), "index", "-f", "json"],
        env=environ(vault),
        cwd=vault.root,
        capture_output=True,
        text=True,
        timeout=4 * 3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"tsm index failed for {vault.name}: {done.stderr}")
    report = json.loads(done.stdout)
    return (
        f"{report['indexed']} indexed, {report['unchanged']} unchanged, "
        f"{report['chunks']} chunks written in {time.perf_counter() - started:.0f} s"
    )


def search_all(vault: Vault) -> None:
    """Each row's search, made in this process exactly as `find_context` makes it."""
    knowledge = LocalKnowledge(load_settings(vault.root, environ(vault)))
    policy = Policy()
    try:
        for row in vault.rows:
            query = build_query(row["prompt"])
            request = SearchRequest(query, top_k=policy.top_k, fallback="fts-only")
            row["query"] = query
            row["search"] = search_to_dict(knowledge.search(request))
    finally:
        knowledge.close()


def expected(row: Row) -> list[str]:
    expect = row["expect"]
    return [] if expect is None else [expect] if isinstance(expect, str) else list(expect)


def first_answers(row: Row) -> bool:
    """Whether the search's first hit is a note that answers the prompt."""
    results = row["search"]["results"]
    return bool(results) and results[0]["source"]["path"] in expected(row)


def injection(row: Row, policy: Policy) -> Injection:
    return decide(row["search"], policy, row["query"])


def rates(rows: Iterable[Row], policy: Policy) -> tuple[int, int, int, int]:
    """(first injected, first answers, unrelated silent, unrelated) over `rows`: the
    decisions of `decide` without rendering its XML, which the sweep does not need."""
    hit = ans = silent = unrelated = 0
    for row in rows:
        decisions = select_results(row["search"]["results"], policy)[1]
        if row["expect"] is None:
            unrelated += 1
            silent += not any(d.injected for d in decisions)
        elif first_answers(row):
            ans += 1
            hit += decisions[0].injected
    return hit, ans, silent, unrelated


def share(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


def policies() -> list[Policy]:
    names = list(GRID)
    return [
        Policy(**dict(zip(names, cell, strict=True))) for cell in itertools.product(*GRID.values())
    ]


def distance(policy: Policy) -> float:
    """How far a policy is from the defaults (ties go to the nearer one)."""
    base = Policy()
    return sum(
        abs(getattr(policy, n) - getattr(base, n)) / (GRID[n][-1] - GRID[n][0]) for n in GRID
    )


def fit(fitted: list[Vault]) -> Policy:
    """The policy that keeps every fitted vault silent on >= 95 % of its unrelated prompts and
    injects the first note for the most prompts, counted per vault (the worst vault first,
    then the sum), so no one large vault decides."""

    def quality(policy: Policy) -> tuple[bool, float, float, float]:
        per = [rates(v.rows, policy) for v in fitted]
        silent_ok = all(share(s, u) >= GOAL_SILENT for _, _, s, u in per)
        firsts = [share(h, a) for h, a, _, _ in per]
        return silent_ok, min(firsts), sum(firsts), -distance(policy)

    return max(policies(), key=quality)


def hook_check(vault: Vault, policy: Policy) -> tuple[int, int, int, int, int]:
    """The real `tsm context` fed the hook's JSON, under `policy` set in its environment:
    (first injected, first answers, silent, unrelated, rows where it differs from offline)."""
    env = environ(vault) | {
        "TSM_INJECT_MIN_RELEVANCE": str(policy.min_relevance),
        "TSM_INJECT_MIN_COVERAGE": str(policy.min_coverage),
        "TSM_INJECT_MIN_DROP": str(policy.min_drop),
    }
    if policy.coverage_min_relevance != Policy().coverage_min_relevance:
        return (0, 0, 0, 0, -1)  # not settable from the environment: offline only
    tsm = str(ROOT / ".venv" / "bin" / "tsm")
    started = subprocess.run([tsm, "start"], env=env, cwd=vault.root, capture_output=True)
    if started.returncode != 0:  # a warm daemon, as in a session: a model load per prompt else
        raise SystemExit(f"tsm start failed: {started.stderr.decode()}")
    try:
        return _hook_rows(vault, policy, env)
    finally:
        subprocess.run([tsm, "stop"], env=env, cwd=vault.root, capture_output=True)


def _hook_rows(vault: Vault, policy: Policy, env: dict[str, str]) -> tuple[int, int, int, int, int]:
    hit = ans = silent = unrelated = differ = 0
    for row in vault.rows:
        payload = json.dumps({"prompt": row["prompt"], "cwd": str(vault.root)}, ensure_ascii=False)
        done = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "tsm"), "context"],
            input=payload,
            env=env,
            cwd=vault.root,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise SystemExit(f"tsm context failed: {done.stderr}")
        paths: list[str] = []
        if done.stdout.strip():
            xml = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
            paths = [r.findtext("source") or "" for r in ET.fromstring(xml).findall("result")]
        offline = [d.path for d in injection(row, policy).decisions if d.injected]
        differ += paths != offline
        if row["expect"] is None:
            unrelated += 1
            silent += not paths
        elif first_answers(row):
            ans += 1
            hit += bool(paths) and paths[0] == row["search"]["results"][0]["source"]["path"]
    return hit, ans, silent, unrelated, differ


def promoted(answer: Injection) -> bool:
    """Whether the first hit went in only because a hit below it did (the ordering rule);
    before it, the hook injected the lower hit and dropped the first."""
    first = answer.decisions[0]
    return first.injected and first.reason.startswith("ranked above an injected hit")


def pct(part: int, whole: int) -> str:
    return f"{100 * share(part, whole):5.1f} % ({part}/{whole})"


def describe(policy: Policy) -> str:
    return ", ".join(f"{n} {getattr(policy, n):g}" for n in GRID)


def misses(vault: Vault, policy: Policy, limit: int = 8) -> list[str]:
    out = []
    for row in vault.rows:
        decisions = injection(row, policy).decisions
        about = row["expect"] is not None
        if about and first_answers(row) and not decisions[0].injected:
            out.append(f"  - missed {row['id']} `{row['prompt'][:60]}`: {decisions[0].reason}")
        elif not about and any(d.injected for d in decisions):
            first = next(d for d in decisions if d.injected)
            out.append(
                f"  - spoke on {row['id']} `{row['prompt'][:60]}`: {first.path}: {first.reason}"
            )
    return out[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", action="append", choices=list(vaults()), help="default: all")
    parser.add_argument("--no-hook", action="store_true", help="skip the end-to-end check")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    names = args.vault or list(vaults())
    lines = [
        f"# The prompt hook's injection on {len(names)} vaults "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
        f"{open('/proc/loadavg').read().split()[0]})",
        "",
        f"`python bench/abstention.py {' '.join(sys.argv[1:])}`".replace(" `", "`"),
        "",
    ]
    chosen: list[Vault] = []
    for name in names:
        vault = vaults()[name]()
        lines.append(f"- {name} ({vault.kind}): {index(vault)}; {len(vault.rows)} prompts")
        search_all(vault)
        chosen.append(vault)
    default = Policy()
    lines += ["", f"## Defaults ({describe(default)})", ""]
    lines += [
        "| vault | first note injected | of which only as ranked above an injected hit "
        "| unrelated silent |",
        "|---|---|---|---|",
    ]
    for vault in chosen:
        h, a, s, u = rates(vault.rows, default)
        lifted = sum(
            first_answers(row) and promoted(injection(row, default))
            for row in vault.rows
            if row["expect"] is not None
        )
        lines.append(f"| {vault.name} | {pct(h, a)} | {lifted} | {pct(s, u)} |")
    for vault in chosen:
        lines += ["", f"{vault.name}, defaults:", *misses(vault, default)]
    if len(chosen) > 1:
        lines += ["", "## Leave one vault out", ""]
        lines += ["| held out | fitted on the others | first note injected | unrelated silent |"]
        lines += ["|---|---|---|---|"]
        for held in chosen:
            policy = fit([v for v in chosen if v is not held])
            h, a, s, u = rates(held.rows, policy)
            lines.append(f"| {held.name} | {describe(policy)} | {pct(h, a)} | {pct(s, u)} |")
        every = fit(chosen)
        lines += ["", f"Fitted on all {len(chosen)}: {describe(every)}", ""]
        for vault in chosen:
            h, a, s, u = rates(vault.rows, every)
            lines.append(f"- {vault.name}: first {pct(h, a)}, silent {pct(s, u)}")
    if not args.no_hook:
        lines += ["", "## End to end: the real `tsm context` fed the hook's JSON, defaults", ""]
        for vault in chosen:
            h, a, s, u, d = hook_check(vault, default)
            lines.append(
                f"- {vault.name}: first {pct(h, a)}, silent {pct(s, u)}; "
                f"{d} prompts injected otherwise than the offline decision"
            )
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
