"""`tsm init`, `tsm index`, `tsm reindex`, `tsm rebuild`."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..render.human_format import one_line
from .runtime import emit, knowledge, progress_bar


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "init",
        parents=[parent],
        help="create the index and commented config files (never overwrites)",
    )
    p.set_defaults(handler=run_init)
    p = sub.add_parser("index", parents=[parent], help="index files or folders (incremental)")
    p.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="files or folders (default: the content dirs, else the index root)",
    )
    p.add_argument(
        "--files-from-stdin",
        action="store_true",
        help="read paths to index from standard input, one per line",
    )
    p.add_argument(
        "--no-embed",
        action="store_true",
        help="only update the keyword index; vectors are added later",
    )
    p.set_defaults(handler=run_index)
    p = sub.add_parser(
        "ingest-session",
        parents=[parent],
        help="add a Claude Code session transcript (JSONL) as Q&A chunks",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="the transcript (.jsonl)")
    p.set_defaults(handler=run_ingest_session)
    p = sub.add_parser(
        "reindex",
        parents=[parent],
        help="rebuild keyword rows (fts), vectors, or both (all) from stored text",
        description="fts: re-tokenize stored chunks into the keyword index; "
        "vectors: drop every vector and embed again (in a team store, this "
        "root's own only); all: both. With the "
        "daemon running this returns at once and runs in the background while "
        "searches go on; without it, it runs here.",
    )
    p.add_argument("target", choices=("all", "fts", "vectors"), help="what to rebuild")
    p.set_defaults(handler=run_reindex)
    p = sub.add_parser(
        "rebuild",
        parents=[parent],
        help="back up the DB and rebuild the index from scratch (--apply)",
        description="Without --apply, print what would be done. With --apply: "
        "stop the daemon if it runs (the next search starts it again), build a "
        "new index beside the old one from every file and every transcript the "
        "old one knew (keeping the rows of transcripts that are gone), reuse "
        "vectors of unchanged text, and swap it in with one rename; the old DB "
        "stays as <db>.bak-<timestamp>. Any failure before the swap (disk full, "
        "Ctrl-C) leaves the old index as it was.",
    )
    p.add_argument("--apply", action="store_true", help="really do it")
    p.set_defaults(handler=run_rebuild)


def run_init(args: argparse.Namespace) -> int:
    from .trust_cmd import trust_root

    client = knowledge()
    result: dict[str, Any] = dict(client.init())
    # Setting up an index here is the user vouching for it (README "Trust model").
    result["trust"] = trust_root(client.settings.index_root)
    lines = (
        [f"created  {p}" for p in result["created"]]
        + [f"kept     {p}" for p in result["existing"]]
        + [f"trusted  {result['trust']['root']}"]
        + [f"  now honoured: {line}" for line in result["trust"]["honoured"]]
    )
    emit(args, result, "\n".join(lines))
    return 0


def run_index(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if args.files_from_stdin:
        # Bytes, decoded as the file system does: an undecodable name is skipped, not fatal.
        lines = (os.fsdecode(line.rstrip(b"\r\n")) for line in sys.stdin.buffer)
        paths += [Path(line.strip()) for line in lines if line.strip()]
        if not paths:
            raise UserError("--files-from-stdin: no paths on standard input")
    for path in paths:
        if "\0" in str(path):  # no file name holds one; the OS refuses it with a ValueError
            raise UserError(
                f"{'--files-from-stdin: ' if args.files_from_stdin else ''}the path "
                f"'{one_line(str(path))}' holds a NUL byte, which no file name can",
                "give one path per line (not `find -print0`)",
            )
    client = knowledge()
    report = client.index(paths, embed=not args.no_embed, progress=progress_bar(args))
    # Which tsm indexes, for the plugin's hooks and the search skill, which may not find it
    # on PATH (`./scripts/demo` indexes with .venv/bin/tsm): launcher.py.
    from ..launcher import remember

    remember(os.environ)
    data = asdict(report)
    human = (
        f"indexed {data['indexed']}, unchanged {data['unchanged']}, removed "
        f"{data['removed']}, renamed {data['renamed']}, chunks {data['chunks']}, "
        f"embedded {data['embedded']} in {data['took_ms'] / 1000:.1f}s"
    )
    if report.embedded_in_background:
        human += " (the daemon embeds new text in the background)"
    human += "".join(
        f"\nskipped {one_line(s['path'])}: {one_line(s['reason'])}" for s in data["skipped"]
    )
    human += "".join(f"\nwarning: {one_line(w)}" for w in data["warnings"])
    emit(args, data, human)
    return 0


def run_ingest_session(args: argparse.Namespace) -> int:
    data = asdict(knowledge().ingest_session(args.file, progress=progress_bar(args)))
    if data["indexed"]:
        human = (
            f"ingested {one_line(args.file)}: {data['chunks']} turns, {data['embedded']} embedded"
        )
    elif data["unchanged"]:
        human = f"{one_line(args.file)} is unchanged since it was ingested; nothing to do"
    else:
        human = "; ".join(
            f"skipped {one_line(s['path'])}: {one_line(s['reason'])}" for s in data["skipped"]
        )
    human += "".join(f"\nwarning: {one_line(w)}" for w in data["warnings"])
    emit(args, data, human)
    return 0


def run_reindex(args: argparse.Namespace) -> int:
    report = knowledge().reindex(args.target, progress_bar(args))
    data = {k: v for k, v in asdict(report).items() if v is not None}  # what this run did
    parts = []
    if "fts_documents" in data:
        parts.append(f"keyword rows of {data['fts_documents']} documents")
    if "vectors_dropped" in data:
        parts.append(f"vectors ({data['vectors_dropped']} dropped)")
    verb = "rebuilding in the background:" if data["background"] else "rebuilt"
    emit(args, data, f"{verb} {' and '.join(parts)}")
    return 0


def run_rebuild(args: argparse.Namespace) -> int:
    client = knowledge()
    if not args.apply:
        plan = client.rebuild_plan()
        human = "\n".join(
            [
                "would (run again with --apply):",
                *(f"  {i}. {s}" for i, s in enumerate(plan["steps"], 1)),
            ]
        )
        emit(args, plan, human)
        return 0
    data = client.rebuild(progress_bar(args))
    sessions = data["sessions"]
    human = (
        f"rebuilt: {data['indexed']} files, {data['chunks']} chunks, "
        f"{len(sessions['reingested'])} transcripts ingested again from outside the "
        f"root, {data['vectors_reused']} vectors reused, {data['embedded']} embedded; "
        f"backup at {data['backup'] or '(none: there was no index)'}"
    )
    human += "".join(
        f"\nkept from the old index: {one_line(k['path'])} ({one_line(k['reason'])})"
        for k in sessions["kept_from_old_index"]
    )
    human += "".join(
        f"\nskipped {one_line(s['path'])}: {one_line(s['reason'])}" for s in data["skipped"]
    )
    human += "".join(f"\nwarning: {one_line(w)}" for w in data["warnings"])
    emit(args, data, human)
    return 0
