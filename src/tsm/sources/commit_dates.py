"""The date of a file's last commit, for the files of a git work tree: a fresh clone gives
every file the clone's time as mtime, so a note with no date of its own would read as
written today. One `git log` per work tree and index run, read as it streams, stopped once
every file asked about has its date; bounded in time and output. No git, no work tree, a
repository git refuses (another user's), or any failure: no date, and the caller keeps the
mtime.

The repository is untrusted (a clone): git runs with nothing of its config that can start a
program — no fsmonitor, pager, external diff, textconv, signature check (gpg.program), or
fetch of a partial clone's missing objects — and none of the caller's GIT_* variables."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

TIMEOUT_SECONDS = 30.0
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
_HEADER = "\x01"  # starts each commit's line in the output (`--format=%x01%ct`)
# Each `-c` overrides what the repository's .git/config may set to a command.
_SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.pager=cat",
    "log.showSignature=false",
    "protocol.allow=never",  # a partial clone would fetch missing trees from its remote
    "credential.helper=",
    "diff.external=",
)
_LOG = (
    "log",
    "-z",
    "--name-only",
    "--format=%x01%ct",
    "--no-renames",
    "--no-textconv",
    "--no-ext-diff",
    "--no-show-signature",
    "--no-color",
    "HEAD",
    "--",
)


class CommitDates:
    """Last-commit times (seconds since the epoch) of files under `root`, by their path
    relative to it; each work tree's log is read on the first question about one of its
    files. `wanted` are the paths this run may ask about: the log is read until each has
    its date."""

    def __init__(self, root: Path, wanted: Iterable[str]) -> None:
        self.root = root
        self.wanted = set(wanted)
        self._tops: dict[Path, Path | None] = {}
        self._dates: dict[Path, dict[str, float]] = {}

    def of(self, rel: str) -> float | None:
        """When `rel` was last committed; None when it never was, or git cannot say."""
        path = self.root / rel
        top = self._top(path.parent)
        if top is None:
            return None
        if top not in self._dates:
            self._dates[top] = self._read(top)
        return self._dates[top].get(_relative(path, top) or "")

    def _top(self, folder: Path) -> Path | None:
        """The work tree holding `folder`: the nearest folder at or above it with a `.git`."""
        if folder not in self._tops:
            if os.path.lexists(folder / ".git"):
                self._tops[folder] = folder
            else:
                self._tops[folder] = None if folder.parent == folder else self._top(folder.parent)
        return self._tops[folder]

    def _read(self, top: Path) -> dict[str, float]:
        wanted = {inside for rel in self.wanted if (inside := _relative(self.root / rel, top))}
        # The root inside a larger work tree: only the commits that touched it.
        scope = _relative(self.root, top) if self.root != top else None
        try:
            return _log(top, wanted, scope)
        except OSError:  # no git on PATH: the mtime, as without a work tree
            return {}


def _relative(path: Path, top: Path) -> str | None:
    try:
        return PurePosixPath(path.relative_to(top)).as_posix()
    except ValueError:
        return None


def git_environment() -> dict[str, str]:
    """The environment git runs in: this one without GIT_* (a GIT_DIR or GIT_CONFIG_*
    would point it elsewhere), no prompt, no optional lock taken, messages in plain C."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return env | {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


def _log(top: Path, wanted: set[str], scope: str | None) -> dict[str, float]:
    """Each file's newest commit time in `git log` of the work tree at `top`, read until
    every path in `wanted` has one (or the log ends, or the time or output cap is hit:
    what was read by then is right, being the newest commits)."""
    if not wanted:
        return {}
    command = ["git", "--no-pager", "--literal-pathspecs"]
    for setting in _SAFE_CONFIG:
        command += ["-c", setting]
    command += ["-C", str(top), *_LOG, *([scope] if scope else [])]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_environment(),
    )
    timer = threading.Timer(TIMEOUT_SECONDS, proc.kill)
    timer.start()
    dates: dict[str, float] = {}
    missing = set(wanted)
    try:
        assert proc.stdout is not None
        pending, read, stamp, first = b"", 0, None, False
        while missing and read <= MAX_OUTPUT_BYTES:
            block = os.read(proc.stdout.fileno(), 1 << 16)
            if not block:
                break
            read += len(block)
            *fields, pending = (pending + block).split(b"\0")
            for field in fields:
                name = field.decode("utf-8", "surrogateescape")
                if name.startswith(_HEADER):  # a commit: its files follow
                    stamp, first = _stamp(name[1:]), True
                    continue
                if first:  # git puts a newline between a commit's line and its files
                    name, first = name.removeprefix("\n"), False
                if stamp is not None and name and name not in dates:
                    dates[name] = stamp
                    missing.discard(name)
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return dates


def _stamp(text: str) -> float | None:
    try:
        return float(int(text))
    except ValueError:
        return None
