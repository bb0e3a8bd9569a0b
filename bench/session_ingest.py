"""Ingesting long Claude Code transcripts through `tsm ingest-session` with FTS only (vectors
are left to the backfill), timed end to end as a new CLI process, with the process's peak RSS:

- `--turns N`: N turns in English and Japanese, with tool blocks (the everyday case);
- `--blocks N`: one prompt answered by N assistant text blocks, one block per line, as Claude
  Code writes them (issue 14 item 15: 20,000 blocks took 40 s when each block was compared
  with every earlier one);
- `--big-mb N`: a transcript of about N MB, mostly tool output as real ones are (190 MB took
  64 s and 1.5 GB when the file was read whole).

    python bench/session_ingest.py --turns 1000
    python bench/session_ingest.py --blocks 20000 --big-mb 190
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def transcript(turns: int) -> str:
    lines = []
    for n in range(turns):
        ja = n % 2
        question = (
            f"狩猟免許の更新について質問{n}: 必要な書類と講習の日程を教えてください。"
            if ja
            else f"Question {n}: how do I rotate the SQLite WAL file and keep backups?"
        )
        answer = (
            f"回答{n}: 申請書、診断書、写真が必要です。講習は各地で実施。" * 3
            if ja
            else f"Answer {n}: run a checkpoint, then copy the database with the backup "
            "API; never copy the -wal file alone. " * 3
        )
        stamp = f"2026-03-{1 + n % 28:02d}T10:{n % 60:02d}:00.000Z"
        lines.append(
            json.dumps(
                {
                    "type": "user",
                    "uuid": f"u{n}",
                    "timestamp": stamp,
                    "isSidechain": False,
                    "message": {"role": "user", "content": question},
                },
                ensure_ascii=False,
            )
        )
        lines.append(
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": f"a{n}",
                    "timestamp": stamp,
                    "isSidechain": False,
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"t{n}",
                                "name": "Bash",
                                "input": {"command": "ls"},
                            },
                            {"type": "text", "text": answer},
                        ],
                    },
                },
                ensure_ascii=False,
            )
        )
        lines.append(
            json.dumps(
                {
                    "type": "user",
                    "uuid": f"r{n}",
                    "timestamp": stamp,
                    "isSidechain": False,
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": f"t{n}", "content": "a.txt"}
                        ],
                    },
                }
            )
        )
    return "\n".join(lines) + "\n"


def many_blocks(blocks: int) -> Iterator[str]:
    """One prompt, then `blocks` assistant lines of one text block each."""
    yield json.dumps(
        {
            "type": "user",
            "uuid": "u0",
            "timestamp": "2026-03-01T10:00:00.000Z",
            "message": {"role": "user", "content": "Explain the whole migration."},
        }
    )
    # One length, differing only at the end: what a block-by-block comparison pays most for.
    preamble = "Next, move one more table to the new schema and verify its row counts. " * 4
    for n in range(blocks):
        yield json.dumps(
            {
                "type": "assistant",
                "uuid": f"a{n}",
                "timestamp": "2026-03-01T10:00:01.000Z",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"{preamble}#{n:06d}"}],
                },
            }
        )


def big_transcript(megabytes: int) -> Iterator[str]:
    """Turns whose tool results carry ~200 KB of file content each, as `Read` output does."""
    output = ("def handler(event):\n    return process(event)  # 狩猟免許\n" * 4000)[:200_000]
    n = written = 0
    while written < megabytes * 1_000_000:
        stamp = f"2026-03-{1 + n % 28:02d}T10:{n % 60:02d}:00.000Z"
        for line in (
            json.dumps(
                {
                    "type": "user",
                    "uuid": f"u{n}",
                    "timestamp": stamp,
                    "message": {
                        "role": "user",
                        "content": f"Question {n}: what does handler {n} do?",
                    },
                }
            ),
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": f"a{n}",
                    "timestamp": stamp,
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"t{n}",
                                "name": "Read",
                                "input": {"file_path": f"/src/h{n}.py"},
                            }
                        ],
                    },
                }
            ),
            json.dumps(
                {
                    "type": "user",
                    "uuid": f"r{n}",
                    "timestamp": stamp,
                    "message": {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": f"t{n}", "content": output}
                        ],
                    },
                },
                ensure_ascii=False,
            ),
            json.dumps(
                {
                    "type": "assistant",
                    "uuid": f"b{n}",
                    "timestamp": stamp,
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "text",
                                "text": (f"Handler {n} forwards the event to process() unchanged."),
                            }
                        ],
                    },
                }
            ),
        ):
            written += len(line.encode()) + 1
            yield line
        n += 1


def ingest(path: Path, env: dict[str, str]) -> tuple[float, int, dict[str, Any]]:
    """Seconds, peak RSS in MB and the JSON report of one `tsm ingest-session` process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "tsm", "ingest-session", str(path), "-f", "json"],
            env=env,
            stdout=out,
            stderr=err,
        )
        # wait4 gives this child's own peak RSS (RUSAGE_CHILDREN would be a running maximum).
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"ingest-session failed: {err.read().decode(errors='replace')}")
        return seconds, usage.ru_maxrss // 1024, json.loads(out.read())


def measure(label: str, lines: Iterable[str], root: Path) -> None:
    # ingest-session reads transcripts of Claude Code's folder for the root or of a
    # sessions folder: this one is a sessions folder
    (root / "tsm.toml").write_text('[sessions]\ndirs = ["sessions"]\n', encoding="utf-8")
    (root / "sessions").mkdir(exist_ok=True)
    path = root / "sessions" / f"{label}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
    env = {
        **os.environ,
        "TSM_INDEX_ROOT": str(root),
        "TSM_NO_USER_CONFIG": "1",
        "TSM_EMBEDDER": "none",
        "TSM_STATE_DIR": str(root / f".tsm-{label}"),
    }
    seconds, peak, report = ingest(path, env)
    again, _, _ = ingest(path, env)
    print(
        f"| {label}: {path.stat().st_size / 1e6:.1f} MB | {seconds:.2f} s | {peak} MB | "
        f"{report['chunks']} | {again:.2f} s |"
    )
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--blocks", type=int, default=0, help="also one prompt with N blocks")
    parser.add_argument("--big-mb", type=int, default=0, help="also a transcript of N MB")
    args = parser.parse_args()
    print("| transcript | first ingest | peak RSS | chunks | re-ingest unchanged |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="tsm-bench-session-") as tmp:
        root = Path(tmp)
        if args.turns:
            measure(f"{args.turns} turns", transcript(args.turns).splitlines(), root)
        if args.blocks:
            measure(f"{args.blocks} blocks", many_blocks(args.blocks), root)
        if args.big_mb:
            measure(f"{args.big_mb} MB", big_transcript(args.big_mb), root)


if __name__ == "__main__":
    main()
