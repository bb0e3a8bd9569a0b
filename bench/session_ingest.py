"""Ingesting a long Claude Code transcript: 1,000 turns (English and Japanese, with tool
blocks) through `tsm ingest-session --no-embed`-equivalent work (FTS now, vectors later),
timed end to end as a new CLI process.

    python bench/session_ingest.py --turns 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def transcript(turns: int) -> str:
    lines = []
    for n in range(turns):
        ja = n % 2
        question = (f"狩猟免許の更新について質問{n}: 必要な書類と講習の日程を教えてください。" if ja
                    else f"Question {n}: how do I rotate the SQLite WAL file and keep backups?")
        answer = (f"回答{n}: 申請書、診断書、写真が必要です。講習は各地で実施。" * 3 if ja
                  else f"Answer {n}: run a checkpoint, then copy the database with the backup "
                       "API; never copy the -wal file alone. " * 3)
        stamp = f"2026-03-{1 + n % 28:02d}T10:{n % 60:02d}:00.000Z"
        lines.append(json.dumps({"type": "user", "uuid": f"u{n}", "timestamp": stamp,
                                 "isSidechain": False,
                                 "message": {"role": "user", "content": question}},
                                ensure_ascii=False))
        lines.append(json.dumps({"type": "assistant", "uuid": f"a{n}", "timestamp": stamp,
                                 "isSidechain": False, "message": {
                                     "role": "assistant", "content": [
                                         {"type": "tool_use", "id": f"t{n}", "name": "Bash",
                                          "input": {"command": "ls"}},
                                         {"type": "text", "text": answer}]}},
                                ensure_ascii=False))
        lines.append(json.dumps({"type": "user", "uuid": f"r{n}", "timestamp": stamp,
                                 "isSidechain": False, "message": {"role": "user", "content": [
                                     {"type": "tool_result", "tool_use_id": f"t{n}",
                                      "content": "a.txt"}]}}))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tsm-bench-session-") as tmp:
        root = Path(tmp)
        path = root / "session.jsonl"
        path.write_text(transcript(args.turns), encoding="utf-8")
        env = {**os.environ, "TSM_INDEX_ROOT": str(root), "TSM_NO_USER_CONFIG": "1",
               "TSM_EMBEDDER": "none"}
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "tsm", "ingest-session", str(path), "-f",
                              "json"], env=env, capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - started
        report = json.loads(out.stdout)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tsm", "ingest-session", str(path), "-f", "json"],
                       env=env, capture_output=True, check=True)
        again = time.perf_counter() - started
        print(f"| transcript | {args.turns} turns, {path.stat().st_size / 1e6:.1f} MB |")
        print("|---|---:|")
        print(f"| first ingest (new process, FTS; vectors left to the backfill) | "
              f"{seconds:.2f} s, {report['chunks']} Q&A chunks |")
        print(f"| re-ingest unchanged (new process) | {again:.2f} s |")


if __name__ == "__main__":
    main()
