"""Secret redaction (src/tsm/text/redaction.py): recall on the corpus of secret shapes
(tests/secret_corpus.py), false positives on real text, speed on a large transcript and on a
typical search result set, linear time on adversarial shapes; optionally beside detect-secrets
and beside another version of the table.

    python bench/secret_redaction.py                      # tsm's table
    python bench/secret_redaction.py --module /tmp/old_redaction.py   # another version of it
    python bench/secret_redaction.py --detect-secrets /tmp/ds-venv/bin/python

Real text: the Markdown, Python, JSONL and TOML files of this repository and the corpora under
shared/datasets (the first `--corpus-mb` of each). Every hit there is printed so a person can
judge it: these files hold no real secrets, only examples of their shapes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from secret_corpus import EVASIONS, PASSWORDS, PROVIDERS, Case, leaked  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# shared/ sits beside the repository, or beside the folder of worktrees the repository is in.
DATASETS = next(
    (d / "shared" / "datasets" for d in (REPO.parent, REPO.parents[1]) if (d / "shared").is_dir()),
    REPO.parent / "shared" / "datasets",
)

# detect-secrets, run in its own interpreter (it is not a dependency): every plugin, default
# settings, one scan_line per line; prints seconds and the secret types it found.
DETECT_SECRETS = """
import json, sys, time
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import default_settings
lines = open(sys.argv[1], encoding="utf-8").read().split("\\n")
found = []
with default_settings():
    started = time.perf_counter()
    for line in lines:
        found += [(s.type, line[:120], s.secret_value) for s in scan_line(line)]
    took = time.perf_counter() - started
print(json.dumps({"seconds": took, "found": found}))
"""


def transcript_text(megabytes: int) -> str:
    """Prose, code and logs like a transcript's text, with a few real secret shapes."""
    parts = [
        "Question: how do I rotate the SQLite WAL file and keep backups? Run a checkpoint, "
        "then copy the database with the backup API; never copy the -wal file alone.\n",
        "狩猟免許の更新には申請書、診断書、写真が必要です。講習は各地で実施されます。\n",
        "def connect(url: str, password: str | None = None) -> Connection:\n"
        "    token = os.environ['TOKEN']\n    return Connection(url, password=password)\n",
        'Traceback (most recent call last):\n  File "/usr/lib/python3.11/ssl.py", line 1342\n'
        "ssl.SSLError: [SSL: CERTIFICATE_VERIFY_FAILED] sha256=9f86d081884c7d659a2feaa0c55ad0\n",
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n",
    ]
    unit = "".join(parts)
    return unit * (megabytes * 1_000_000 // len(unit.encode()) + 1)


ADVERSARIAL = {
    "plain text": "the quick brown fox jumps over the lazy dog ",
    "sk-ant- without body": "sk-ant-",
    "sk- runs": "sk-" + "a" * 31 + " ",
    "BEGIN without END": "-----BEGIN RSA PRIVATE KEY-----\n",
    "END without BEGIN": "MIIEabc\n-----END RSA PRIVATE KEY-----\n",
    "password= chains": "password=password=",
    "scheme:// chains": "ab://cd:",
    "eyJ. chains": "eyJabcdefghij.",
    "AKIA runs": "AKIA",
    "long word run": "abcdefghij",
    "wrapped key lines": "Ab3dEf7hIj\n",
    "continued lines": "Ab3dEf7hIj\\\n  ",
    "%XX runs": "%41",
    "base64 runs": "QWxhZGRpbjpvcGVuIHNlc2FtZQ== ",
    "Q~ runs": "a1bQ~",
    ":AA runs": "123456789:AA",
    "-us runs": "0123456789abcdef-us1",
    "curl chains": "curl -u ",
    "machine chains": "machine h login u ",
    "password is chains": "password is ",
    "zero-width runs": "a\u200b",
}


def load(path: str | None) -> ModuleType:
    """tsm's redaction module, or the one at `path` (an older version, say)."""
    if path is None:
        from tsm.text import redaction

        return redaction
    spec = importlib.util.spec_from_file_location("redaction_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shown(module: ModuleType, text: str) -> str:
    """What a model gets: for_model where the module has it, else redact alone."""
    return module.for_model(text) if hasattr(module, "for_model") else module.redact(text)


def recall(module: ModuleType) -> None:
    print("| corpus group | redacted | missed |")
    print("|---|---:|---|")
    for group, cases in (
        ("provider keys", PROVIDERS),
        ("password forms", PASSWORDS),
        ("evasions", EVASIONS),
    ):
        missed = [c.name for c in cases if _missed(module, c)]
        print(f"| {group} | {len(cases) - len(missed)} of {len(cases)} | {', '.join(missed)} |")


def _missed(module: ModuleType, case: Case) -> bool:
    out = shown(module, case.text)
    return leaked(case.secret, out) is not None or "[redacted:" not in out


def timing(module: ModuleType, text: str) -> float:
    started = time.perf_counter()
    module.redact(text)
    return time.perf_counter() - started


def result_sets(files: dict[str, str], hits: int = 10) -> list[list[str]]:
    """Typical search results: `hits` chunks of ~1,000 characters and their 200-character
    snippets, cut from the datasets' text."""
    texts = [t for name, t in files.items() if name.endswith("corpus.jsonl")]
    chunks = [t[i : i + 1000] for t in texts for i in range(0, min(len(t), 400_000), 1000)]
    return [
        [field for c in chunks[i : i + hits] for field in (c, c[300:500], c[:40])]
        for i in range(0, len(chunks) - hits, hits)
    ]


def result_set_cost(module: ModuleType, sets: list[list[str]]) -> None:
    took = []
    for fields in sets:
        started = time.perf_counter()
        for field in fields:
            shown(module, field)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    print(
        f"| redaction of one result set (10 hits: chunk, snippet, title), {len(sets)} sets "
        f"| p50 {statistics.median(took):.2f} ms, p95 {took[int(len(took) * 0.95)]:.2f} ms |"
    )


def real_files(corpus_mb: int) -> dict[str, str]:
    files = {}
    for pattern in ("**/*.md", "**/*.py", "**/*.jsonl", "**/*.toml"):
        for path in REPO.glob(pattern):
            if (
                ".venv" in path.parts
                or ".tsm" in path.parts
                or ".cache" in path.parts
                or "attacks" in path.parts
                or "redaction" in path.name
                or "secrets" in path.name
                or "secret_corpus" in path.name
            ):
                continue  # the tests and attacks of this feature hold secret shapes on purpose
            files[str(path.relative_to(REPO))] = path.read_text(errors="replace")
    for path in sorted(DATASETS.glob("*/corpus.jsonl")):
        with path.open(encoding="utf-8", errors="replace") as fh:
            files[str(path.relative_to(DATASETS.parent))] = fh.read(corpus_mb * 1_000_000)
    return files


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50, help="size of the synthetic transcript")
    parser.add_argument("--adversarial-mb", type=int, default=2)
    parser.add_argument("--corpus-mb", type=int, default=20)
    parser.add_argument("--module", help="a redaction.py to measure instead of tsm's")
    parser.add_argument(
        "--old-hooks", help="another version's plugin/hooks folder, to time its XML beside ours"
    )
    parser.add_argument(
        "--detect-secrets",
        metavar="PYTHON",
        help="an interpreter with detect-secrets installed, to compare",
    )
    parser.add_argument(
        "--ds-mb", type=int, default=2, help="MB of each text detect-secrets scans (it is slow)"
    )
    args = parser.parse_args()
    module = load(args.module)

    print("Recall on tests/secret_corpus.py (what a model gets holds no 12-character piece):\n")
    recall(module)
    if args.detect_secrets:
        detect_secrets_recall(args.detect_secrets)

    files = real_files(args.corpus_mb)
    print()
    sets = result_sets(files)
    result_set_cost(module, sets)
    if args.module is None:
        hook_render_cost(sets, args.old_hooks)
    text = transcript_text(args.mb)
    seconds = timing(module, text)
    print(
        f"| redaction, {len(text.encode()) / 1e6:.0f} MB transcript text | "
        f"{seconds:.2f} s ({len(text.encode()) / 1e6 / seconds:.1f} MB/s) |"
    )
    if args.detect_secrets:
        sample = Path("/tmp/tsm-bench-secrets.txt")
        part = text[: args.ds_mb * 1_000_000]
        sample.write_text(part, encoding="utf-8")
        took = run_detect_secrets(args.detect_secrets, sample)["seconds"]
        mb = len(part.encode()) / 1e6
        print(
            f"| detect-secrets, {mb:.0f} MB of the same text | {took:.2f} s "
            f"({mb / took:.2f} MB/s; {args.mb} MB ≈ {took * args.mb / mb:.0f} s) |"
        )

    print(f"\n| adversarial shape, {args.adversarial_mb} MB | seconds | × plain text |")
    print("|---|---:|---:|")
    size = args.adversarial_mb * 1_000_000
    base = None
    for name, unit in ADVERSARIAL.items():
        took = timing(module, unit * (size // len(unit)))
        base = base or took
        print(f"| {name} | {took:.2f} | {took / base:.1f} |")

    total = sum(len(t.encode()) for t in files.values())
    kinds: Counter[str] = Counter()
    print(f"\nReal text: {len(files)} files, {total / 1e6:.1f} MB. Hits (each one to judge):")
    for name, content in files.items():
        for line in content.split("\n"):
            for kind in module.find_secrets(line):
                kinds[kind] += 1
                print(f"- {kind}: {name}: {line.strip()[:140]}")
    print(f"hits: {sum(kinds.values())} {dict(kinds)}")
    if args.detect_secrets:
        sample = Path("/tmp/tsm-bench-secrets-real.txt")
        real = "\n".join(files.values())[: args.ds_mb * 1_000_000]
        sample.write_text(real, encoding="utf-8")
        found = run_detect_secrets(args.detect_secrets, sample)["found"]
        ours = sum(len(module.find_secrets(line)) for line in real.split("\n"))
        print(
            f"first {len(real.encode()) / 1e6:.1f} MB of that text: detect-secrets {len(found)} "
            f"hits {dict(Counter(t for t, _, _ in found))}; this table {ours}"
        )
        for kind, line, _ in found[:60]:
            print(f"- {kind}: {line.strip()}")


def hook_render_cost(sets: list[list[str]], old_hooks: str | None, rounds: int = 3) -> None:
    """The prompt hook's XML rendering (knowledge_xml.render_knowledge_search) of 5-hit result
    sets, this tree's plugin/hooks beside `old_hooks` (another version's folder), alternated
    in one process so both see the same load."""
    import subprocess as sp

    script = (
        "import json, sys, time, statistics\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from knowledge_xml import render_knowledge_search\n"
        "sets = json.load(open(sys.argv[2]))\n"
        "took = []\n"
        "for hits in sets:\n"
        "    t = time.perf_counter()\n"
        "    render_knowledge_search({'query': 'q', 'results': hits, 'total_matches': 5})\n"
        "    took.append((time.perf_counter() - t) * 1000)\n"
        "took.sort()\n"
        "print(json.dumps([statistics.median(took), took[int(len(took) * 0.95)]]))\n"
    )
    searches = [
        [
            {
                "score": 0.5,
                "text": fields[i],
                "snippet": fields[i + 1],
                "section": fields[i + 2],
                "source": {"path": f"notes/{i}.md", "category": "note"},
            }
            for i in range(0, 15, 3)
        ]
        for fields in sets
    ]
    data = Path("/tmp/tsm-bench-hook-sets.json")
    data.write_text(json.dumps(searches), encoding="utf-8")
    hooks = {"this tree": str(Path(__file__).resolve().parents[1] / "plugin" / "hooks")}
    if old_hooks:
        hooks["--old-hooks"] = old_hooks
    results: dict[str, list[list[float]]] = {name: [] for name in hooks}
    for _ in range(rounds):
        for name, folder in hooks.items():
            out = sp.run(
                [sys.executable, "-c", script, folder, str(data)],
                capture_output=True,
                text=True,
                check=True,
            )
            results[name].append(json.loads(out.stdout))
    for name, runs in results.items():
        p50 = ", ".join(f"{a:.2f}" for a, _ in runs)
        p95 = ", ".join(f"{b:.2f}" for _, b in runs)
        print(
            f"| hook XML of a 5-hit result set ({name}), {len(searches)} sets, "
            f"{rounds} alternated rounds | p50 {p50} ms; p95 {p95} ms |"
        )


def run_detect_secrets(python: str, sample: Path) -> dict:
    out = subprocess.run(
        [python, "-c", DETECT_SECRETS, str(sample)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def detect_secrets_recall(python: str) -> None:
    """detect-secrets on the same corpus, one case per line (its scanner reads lines): a case
    counts as found when a secret it reports overlaps the case's secret."""
    print("\ndetect-secrets on the same corpus (a case counts when a reported secret overlaps):\n")
    print("| corpus group | found | missed |")
    print("|---|---:|---|")
    for group, cases in (
        ("provider keys", PROVIDERS),
        ("password forms", PASSWORDS),
        ("evasions", EVASIONS),
    ):
        missed = []
        for case in cases:
            sample = Path("/tmp/tsm-bench-secrets-case.txt")
            sample.write_text(case.text, encoding="utf-8")
            found = run_detect_secrets(python, sample)["found"]
            values = [v for _, _, v in found if v]
            if not any(leaked(v, case.secret, min(12, len(v))) for v in values):
                missed.append(case.name)
        print(f"| {group} | {len(cases) - len(missed)} of {len(cases)} | {', '.join(missed)} |")


if __name__ == "__main__":
    main()
