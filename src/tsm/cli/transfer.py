"""`tsm export FILE` and `tsm import FILE [--replace]`: an index moved between stores
(the core does the work, core/transfer.py; this only parses and formats)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .runtime import emit, knowledge


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "export",
        parents=[parent],
        help="write the index (text, metadata, vectors) to one portable file",
        description="Write the configured store's index (SQLite or PostgreSQL) to FILE: "
        "gzip-compressed JSON Lines with every document's stored text and metadata, its "
        "chunks, tags and links, and the vectors. `tsm import FILE` loads it into any store.",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="the file to write (replaced)")
    p.set_defaults(handler=run_export)
    p = sub.add_parser(
        "import",
        parents=[parent],
        help="load a `tsm export` file into the configured store",
        description="Load FILE, written by `tsm export`, into the configured store (SQLite or "
        "PostgreSQL) in one transaction: keyword rows are rebuilt from the stored text, "
        "vectors are kept (nothing is re-embedded). A store that already holds an index is "
        "refused unless --replace.",
    )
    p.add_argument("file", type=Path, metavar="FILE", help="a file written by `tsm export`")
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the index the store already holds (in the same transaction)",
    )
    p.set_defaults(handler=run_import)


def run_export(args: argparse.Namespace) -> int:
    report = knowledge().export_index(args.file)
    emit(
        args,
        asdict(report),
        f"exported {report.documents} documents, {report.chunks} chunks and "
        f"{report.vectors} vectors from {report.source} to {report.file} "
        f"({_size(report.bytes)})",
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    report = knowledge().import_index(args.file, replace=args.replace)
    replaced = (
        f" (replacing {report.replaced_documents} documents)" if report.replaced_documents else ""
    )
    emit(
        args,
        asdict(report),
        f"imported {report.documents} documents, {report.chunks} chunks and "
        f"{report.vectors} vectors into {report.target}{replaced}"
        + "".join(f"\nskipped {s['path']}: {s['reason']}" for s in report.skipped),
    )
    return 0


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"
