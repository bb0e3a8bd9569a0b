"""Attacks for bench/fault_injection.py: each module of this package lists its attacks in
`ATTACKS`. An attack builds its hostile input under a fresh folder, runs the real `tsm`
(CLI, daemon, hooks or MCP server) against it, and returns what happened.

    def symlink_out_of_root(lab: Lab) -> Outcome:
        \"\"\"A symlink inside the vault pointing at a file outside it (item 4).\"\"\"
        ...
        return Outcome(ok=..., detail="skipped: outside the index root")

`ok` is true when tsm defended itself as SECURITY.md promises; `detail` is one line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / "plugin" / "hooks"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    detail: str


@dataclass
class Lab:
    """A fresh folder for one attack: `home` stands in for $HOME, `vault` is the index root."""

    base: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def vault(self) -> Path:
        return self.base / "home" / "vault"

    @property
    def claude_project(self) -> Path:
        """Claude Code's transcripts folder for sessions in the vault (~/.claude/projects/
        and the vault's real path, each character but a letter or digit a "-"), made."""
        name = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(self.vault))
        folder = self.home / ".claude" / "projects" / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def environ(self, **extra: str) -> dict[str, str]:
        """A clean environment: no TSM_* of the caller, HOME and XDG dirs inside the lab,
        and Claude Code's folder in HOME too (no CLAUDE_CONFIG_DIR)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TSM_") and k != "CLAUDE_CONFIG_DIR"
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            TSM_AUTOSTART="0",
        )
        env.update(self.env)
        env.update(extra)
        return env

    def tsm(
        self,
        *args: str,
        cwd: Path | None = None,
        timeout: float = 60,
        input: bytes | None = None,
        **env: str,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run the real CLI as a subprocess; a hang past `timeout` raises TimeoutExpired."""
        return subprocess.run(
            [sys.executable, "-m", "tsm", *args],
            cwd=cwd or self.vault,
            env=self.environ(**env),
            capture_output=True,
            timeout=stretched(timeout),
            input=input,
        )

    def hook(
        self, script: str, payload: bytes, timeout: float = 30, **env: str
    ) -> subprocess.CompletedProcess[bytes]:
        """Run one of the plugin's hook scripts as Claude Code does: JSON on stdin."""
        return subprocess.run(
            [sys.executable, str(HOOKS / script)],
            input=payload,
            env=self.environ(**env),
            capture_output=True,
            timeout=stretched(timeout),
            cwd=self.vault,
        )


Attack = Callable[[Lab], Outcome]


def stretched(seconds: float) -> float:
    """A bound set for a quiet machine, stretched by the load per core, so a busy machine
    does not turn a slow answer into a "hang"."""
    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
