"""`tsm init`, `tsm index`, `tsm reindex`, `tsm rebuild`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..errors import UserError
from .runtime import emit, local_backend, progress_bar


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("init", parents=[parent],
                       help="create the index and commented config files (never overwrites)")
    p.set_defaults(handler=run_init)
    p = sub.add_parser("index", parents=[parent], help="index files or folders (incremental)")
    p.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                   help="files or folders (default: the content dirs, else the index root)")
    p.add_argument("--files-from-stdin", action="store_true",
                   help="read paths to index from standard input, one per line")
    p.add_argument("--no-embed", action="store_true",
                   help="only update the keyword index; vectors are added later")
    p.set_defaults(handler=run_index)
    p = sub.add_parser("ingest-session", parents=[parent],
                       help="add a Claude Code session transcript (JSONL) as Q&A chunks")
    p.add_argument("file", type=Path, metavar="FILE", help="the transcript (.jsonl)")
    p.set_defaults(handler=run_ingest_session)


def run_init(args: argparse.Namespace) -> int:
    result = local_backend().init()
    lines = [f"created  {p}" for p in result["created"]] + \
        [f"kept     {p}" for p in result["existing"]]
    emit(args, result, "\n".join(lines))
    return 0


def run_index(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if args.files_from_stdin:
        paths += [Path(line.strip()) for line in sys.stdin if line.strip()]
        if not paths:
            raise UserError("--files-from-stdin: no paths on standard input")
    backend = local_backend()
    report = backend.index(paths, embed=not args.no_embed, progress=progress_bar(args))
    data = asdict(report)
    human = (f"indexed {report.indexed}, unchanged {report.unchanged}, removed "
             f"{report.removed}, renamed {report.renamed}, chunks {report.chunks}, "
             f"embedded {report.embedded} in {report.took_ms / 1000:.1f}s")
    human += "".join(f"\nskipped {s['path']}: {s['reason']}" for s in report.skipped)
    human += "".join(f"\nwarning: {w}" for w in report.warnings)
    emit(args, data, human)
    return 0


def run_ingest_session(args: argparse.Namespace) -> int:
    report = local_backend().ingest_session(args.file, progress=progress_bar(args))
    data = asdict(report)
    if report.indexed:
        human = f"ingested {args.file}: {report.chunks} turns, {report.embedded} embedded"
    elif report.unchanged:
        human = f"{args.file} is unchanged since it was ingested; nothing to do"
    else:
        human = "; ".join(f"skipped {s['path']}: {s['reason']}" for s in report.skipped)
    human += "".join(f"\nwarning: {w}" for w in report.warnings)
    emit(args, data, human)
    return 0
