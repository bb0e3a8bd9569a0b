"""`tsm trust [PATH]`, `tsm trust --list`, `tsm untrust [PATH]`: which index roots' tsm.toml
may reach the network or read outside the root, and where the plugin's hooks act."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .runtime import emit


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "trust",
        parents=[parent],
        help="trust an index root: honour all of its tsm.toml, let the hooks act",
        description="Trust PATH (default: the current index root): its tsm.toml "
        "may then set an openai: embedder or folders outside the root, and the "
        "Claude Code hooks act there. Recorded in the user config dir.",
    )
    p.add_argument("path", nargs="?", type=Path, help="the index root (default: the current one)")
    p.add_argument("--list", action="store_true", help="list the trusted roots")
    p.set_defaults(handler=run_trust)
    p = sub.add_parser("untrust", parents=[parent], help="stop trusting an index root")
    p.add_argument("path", nargs="?", type=Path, help="the index root (default: the current one)")
    p.set_defaults(handler=run_untrust)


def current_root(path: Path | None) -> Path:
    """PATH as given, else the index root around the working directory."""
    if path is not None:
        return path
    from .. import locate

    return Path(locate.index_root(os.getcwd(), os.environ))


def trust_root(root: Path) -> dict[str, Any]:
    """Trust `root` and say which of its tsm.toml settings that turns on."""
    from .. import trust
    from ..config import settings_needing_trust

    added = trust.add(root, os.environ)
    # The plugin's hooks act in trusted roots: tell them which tsm to run (launcher.py).
    from ..launcher import remember

    remember(os.environ)
    folder = os.path.realpath(root)
    return {
        "root": folder,
        "trusted": True,
        "added": added,
        "honoured": settings_needing_trust(Path(folder)),
        "trust_file": str(trust.trust_file(os.environ)),
    }


def run_trust(args: argparse.Namespace) -> int:
    from .. import trust

    if args.list:
        roots = trust.listed(os.environ)
        emit(
            args,
            {"trusted": roots, "trust_file": str(trust.trust_file(os.environ))},
            "\n".join(roots) if roots else "no trusted index roots",
        )
        return 0
    data = trust_root(current_root(args.path))
    human = f"{'trusted' if data['added'] else 'already trusted'}: {data['root']}"
    human += "".join(f"\n  now honoured: {line}" for line in data["honoured"])
    emit(args, data, human)
    return 0


def run_untrust(args: argparse.Namespace) -> int:
    from .. import trust

    root = current_root(args.path)
    removed = trust.remove(root, os.environ)
    folder = os.path.realpath(root)
    emit(
        args,
        {"root": folder, "trusted": False, "removed": removed},
        f"{'no longer trusted' if removed else 'was not trusted'}: {folder}",
    )
    return 0
