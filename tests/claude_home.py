"""Where Claude Code keeps a project's transcripts in a test: CLAUDE_CONFIG_DIR is the
test's own (conftest.isolated_env), and `tsm ingest-session` reads only from there (for
sessions run in the index root or below it) or from a sessions folder."""

from __future__ import annotations

import os
import re
from pathlib import Path


def project_dir(directory: Path) -> Path:
    """The transcripts folder of sessions run in `directory`, created: Claude Code names it
    after the folder's path, each character but an ASCII letter or digit a "-"."""
    name = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(directory))
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
