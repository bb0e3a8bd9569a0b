"""Secret redaction (src/tsm/text/redaction.py): speed on a large transcript, linear time on
adversarial shapes, and false positives on real text, optionally beside detect-secrets.

    python bench/secret_redaction.py                      # tsm's table only
    python bench/secret_redaction.py --mb 50 --detect-secrets /tmp/ds-venv/bin/python

Real text: the Markdown, Python and JSONL files of this repository and the corpora under
../shared/datasets (the first `--corpus-mb` of each). Every hit there is printed so a person
can judge it: these files hold no real secrets, only examples of their shapes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tsm.text.redaction import find_secrets, redact  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"

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
        found += [(s.type, line[:120]) for s in scan_line(line)]
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
}


def timing(text: str) -> float:
    started = time.perf_counter()
    redact(text)
    return time.perf_counter() - started


def real_files(corpus_mb: int) -> dict[str, str]:
    files = {}
    for pattern in ("**/*.md", "**/*.py", "**/*.jsonl", "**/*.toml"):
        for path in REPO.glob(pattern):
            if (
                ".venv" in path.parts
                or ".cache" in path.parts
                or "attacks" in path.parts
                or "redaction" in path.name
                or "secrets" in path.name
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
    parser.add_argument(
        "--detect-secrets",
        metavar="PYTHON",
        help="an interpreter with detect-secrets installed, to compare",
    )
    args = parser.parse_args()

    text = transcript_text(args.mb)
    seconds = timing(text)
    print(
        f"| tsm redaction, {len(text.encode()) / 1e6:.0f} MB transcript text | "
        f"{seconds:.2f} s ({len(text.encode()) / 1e6 / seconds:.0f} MB/s) |"
    )
    if args.detect_secrets:
        sample = Path("/tmp/tsm-bench-secrets.txt")
        sample.write_text(text[:5_000_000], encoding="utf-8")
        out = subprocess.run(
            [args.detect_secrets, "-c", DETECT_SECRETS, str(sample)],
            capture_output=True,
            text=True,
            check=True,
        )
        took = json.loads(out.stdout)["seconds"]
        print(
            f"| detect-secrets, 5 MB of the same text | {took:.2f} s "
            f"({5 / took:.1f} MB/s; {args.mb} MB ≈ {took * args.mb / 5:.0f} s) |"
        )

    print(f"\n| adversarial shape, {args.adversarial_mb} MB | seconds | × plain text |")
    print("|---|---:|---:|")
    size = args.adversarial_mb * 1_000_000
    base = None
    for name, unit in ADVERSARIAL.items():
        took = timing(unit * (size // len(unit)))
        base = base or took
        print(f"| {name} | {took:.2f} | {took / base:.1f} |")

    files = real_files(args.corpus_mb)
    total = sum(len(t.encode()) for t in files.values())
    kinds: Counter[str] = Counter()
    print(f"\nReal text: {len(files)} files, {total / 1e6:.1f} MB. Hits (each one to judge):")
    for name, content in files.items():
        for line in content.split("\n"):
            for kind in find_secrets(line):
                kinds[kind] += 1
                print(f"- {kind}: {name}: {line.strip()[:140]}")
    print(f"tsm: {sum(kinds.values())} hits {dict(kinds)}")
    if args.detect_secrets:
        sample = Path("/tmp/tsm-bench-secrets-real.txt")
        sample.write_text("\n".join(files.values()), encoding="utf-8")
        out = subprocess.run(
            [args.detect_secrets, "-c", DETECT_SECRETS, str(sample)],
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(out.stdout)["found"]
        print(f"detect-secrets: {len(found)} hits {dict(Counter(t for t, _ in found))}")
        for kind, line in found[:40]:
            print(f"- {kind}: {line.strip()}")


if __name__ == "__main__":
    main()
