"""`tsm list`, `tsm tags`, `tsm info`, `tsm get`."""

from __future__ import annotations

import argparse
from typing import Any

from .runtime import emit, knowledge

DOC_HELP = (
    "document id, or path: read from the current folder (from the index root when that "
    "does not lead into it), or as tsm prints it (from the index root)"
)


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("list", parents=[parent], help="list indexed documents")
    p.add_argument("--type", help="only this document type")
    p.set_defaults(handler=run_list)
    p = sub.add_parser("tags", parents=[parent], help="tags with their document counts")
    p.set_defaults(handler=run_tags)
    p = sub.add_parser("info", parents=[parent], help="metadata of one document")
    p.add_argument("doc", metavar="DOC", help=DOC_HELP)
    p.set_defaults(handler=run_info)
    p = sub.add_parser("get", parents=[parent], help="the whole text of one document")
    p.add_argument("doc", metavar="DOC", help=DOC_HELP)
    p.set_defaults(handler=run_get)


def run_list(args: argparse.Namespace) -> int:
    from ..render.human_format import table

    client = knowledge()
    docs = [d.as_json() for d in client.list_documents(args.type)]
    terminal = _terminal(client.settings.index_root)
    emit(args, docs, table(docs, ("id", "type", "date", "path", "title", "tags"), terminal))
    return 0


def run_tags(args: argparse.Namespace) -> int:
    from ..render.human_format import table

    tags = [t.as_json() for t in knowledge().tags()]
    emit(args, tags, table(tags, ("name", "count"), _terminal()))
    return 0


def run_info(args: argparse.Namespace) -> int:
    from ..render.human_format import mapping

    info = knowledge().info(args.doc).as_json()
    emit(args, info, mapping(info, terminal=_terminal()))
    return 0


def run_get(args: argparse.Namespace) -> int:
    from ..render.human_format import one_line

    doc = knowledge().get(args.doc).as_json()
    emit(args, doc, f"# {one_line(doc['title'])}  ({one_line(doc['path'])})\n\n{doc['text']}")
    return 0


def _terminal(root: Any = None) -> Any:
    """Colour, width and links (into `root`) of this stdout's terminal (render/terminal.py)."""
    from ..render.terminal import Terminal

    return Terminal.detect(root=root)
