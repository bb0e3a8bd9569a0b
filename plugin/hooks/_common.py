"""What the three hook scripts share: reading Claude Code's input, finding the workspace,
running `tsm` under a deadline, logging failures, and the error boundary that keeps every
hook silent and at exit 0.

Stdlib only, and runnable by Python 3.9 too: hooks run under whatever `python3` is on the
user's PATH (macOS ships 3.9), not under tsm's own interpreter.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections import namedtuple
from pathlib import Path

import _find_tsm  # the hooks run as scripts with their own folder on sys.path
import _locate

# Every prompt pays this module's imports, so typing, dataclasses and datetime stay out of
# the run-time path (bench/hook_latency.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, BinaryIO

LOG_FILE = "hooks.log"
# A tsm that fails on every prompt must not grow the log without bound: keep one old file.
LOG_MAX_BYTES = 1_000_000

HookInput = dict  # the hook input: one JSON object


class HookFailure(Exception):
    """A failure the user should find in the hook log, never in the prompt."""


class Workspace(namedtuple("Workspace", "root state_dir configured")):
    """Where tsm keeps its index for a hook's working directory (root, state_dir: Path).

    `configured` is true only where the user trusts the index root (`tsm init` or `tsm trust`
    there, or their own absolute TSM_INDEX_ROOT: README "Trust model"). Elsewhere the hooks do
    nothing at all: installing the plugin leaves no .tsm directories in unrelated projects,
    and a cloned repository that ships a tsm.toml or a .tsm folder is not set up by the user.
    """

    __slots__ = ()


def find_workspace(cwd: Path, environ: Mapping[str, str]) -> Workspace:
    """Index root, state dir and trust by the same rules as tsm (_locate.py is its locate.py)."""
    root = _locate.index_root(str(cwd), environ)
    return Workspace(
        root=Path(root),
        state_dir=Path(_locate.state_dir(root, environ)),
        configured=_locate.is_trusted(root, environ),
    )


def read_hook_input(stream: BinaryIO) -> HookInput:
    """Parse the hook input JSON object; anything else is a logged failure, not a crash."""
    raw = stream.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise HookFailure(f"hook input is not UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise HookFailure(f"hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookFailure(f"hook input is a JSON {type(data).__name__}, not an object")
    return data


def input_cwd(data: HookInput) -> Path:
    """The session's working directory; Claude Code always sends it, and runs hooks there."""
    cwd = data.get("cwd")
    return Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd()


def input_string(data: HookInput, *keys: str) -> str:
    """A nested string field such as ("tool_input", "file_path"), or a HookFailure naming it."""
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, str) or not value:
        raise HookFailure(f"hook input has no string {'.'.join(keys)!r}")
    return value


def env_float(environ: Mapping[str, str], name: str, default: float) -> float:
    """A float setting; a malformed value falls back to the default rather than failing."""
    try:
        return float(environ[name])
    except (KeyError, ValueError):
        return default


# Python's own settings that decide which code it loads (PYTHONPATH, PYTHONHOME,
# PYTHONUSERBASE, PYTHONSTARTUP, PYTHONWARNINGS' categories, …) come from the session's
# environment, which a repository's direnv file may have pointed into the repository; tsm
# runs from its own install and needs none of them. The output encoding the user chose stays.
KEPT_PYTHON_SETTINGS = ("PYTHONIOENCODING", "PYTHONUTF8")


def without_python_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without the PYTHON* variables, but for KEPT_PYTHON_SETTINGS."""
    return {
        name: value
        for name, value in environ.items()
        if not name.startswith("PYTHON") or name in KEPT_PYTHON_SETTINGS
    }


def run_tsm(
    args: Sequence[str],
    *,
    workspace: Workspace,
    session_cwd: Path,
    timeout: float,
    environ: Mapping[str, str],
    stdin: bytes = b"",
) -> str:
    """Run `tsm ARGS` in the index root with `stdin` as its input and return its stdout; any
    failure becomes a HookFailure.

    The program is one no repository controls (_find_tsm): never one found in the session's
    folder, the index root or another trusted root. It runs in the index root, where a
    relative TSM_INDEX_ROOT becomes `.` (relative, so it vouches for nothing), so tsm acts
    on the root the hook found and vetted. Output goes to temporary files, not pipes, so a
    daemon that tsm starts and that keeps an inherited descriptor open cannot make us wait
    past the deadline; at the deadline the whole process group is killed.
    """
    roots = [str(workspace.root), str(session_cwd), *_locate.trusted_roots(environ)]
    try:
        command = [*_find_tsm.tsm_command(environ, roots), *args]
    except _find_tsm.NotFound as exc:
        raise HookFailure(str(exc)) from None
    child_env = without_python_settings(environ)
    explicit = environ.get("TSM_INDEX_ROOT")
    if explicit and not os.path.isabs(_locate.expand_home(explicit, environ)):
        child_env["TSM_INDEX_ROOT"] = "."
    with (
        tempfile.TemporaryFile() as given,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        given.write(stdin)
        given.seek(0)
        try:
            process = subprocess.Popen(
                command,
                cwd=workspace.root,
                env=child_env,
                stdin=given,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise HookFailure(f"cannot run {command[0]}: {exc}") from None
        # A timer kills the group at the deadline while wait() blocks in waitpid: wait(timeout)
        # would poll with sleeps growing to 50 ms, adding ~25 ms to every prompt.
        expired = threading.Event()
        timer = threading.Timer(timeout, lambda: (expired.set(), _signal_group(process)))
        timer.start()
        try:
            code = process.wait()
        finally:
            timer.cancel()
        if expired.is_set():
            raise HookFailure(f"`tsm {args[0]}` timed out after {timeout:g}s")
        if code != 0:
            err.seek(0)
            detail = _error_detail(err.read().decode("utf-8", errors="replace"))
            raise HookFailure(f"`tsm {args[0]}` exited with {code}: {detail}")
        out.seek(0)
        return out.read().decode("utf-8", errors="replace")


def _signal_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's whole process group (it runs in its own session); whoever waits
    for it reaps it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except OSError:
        pass


def _error_detail(stderr: str) -> str:
    """The CLI's JSON error object when there is one (CONTRACT.md "Errors"), else its last line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        try:
            error = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(error, dict) and "error" in error:
            return f"{error.get('kind', 'error')}: {error['error']}"
    return lines[-1][:500] if lines else "(no message on stderr)"


def log_failure(workspace: Workspace | None, hook: str, message: str) -> None:
    """Append one timestamped line to <state dir>/logs/hooks.log; never raise.

    Outside a configured workspace the line goes to stderr instead (Claude Code shows it only
    in debug mode), because creating a state dir there would be the litter we avoid. So it
    does when the log cannot be written safely (see `_append_private`). Control characters
    are escaped: the message quotes config values and filenames a repository chose.
    """
    from datetime import datetime

    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    line = f"{stamp} {hook}: {escape_controls(message)}\n"
    try:
        if workspace is None or not workspace.configured:
            sys.stderr.write(line)
            return
        logs = _private_dir(_private_dir(workspace.state_dir) / "logs")
        path = logs / LOG_FILE
        if os.path.lexists(path) and os.lstat(path).st_size > LOG_MAX_BYTES:
            os.replace(path, logs / (LOG_FILE + ".1"))  # renames a link, never follows it
        _append_private(path, line.encode("utf-8", errors="replace"))
    except Exception:  # noqa: BLE001 - a broken log must not break the user's prompt
        try:
            sys.stderr.write(line)
        except Exception:  # noqa: BLE001
            pass


# C0 and C1 controls, DEL, and the Unicode line separators (tsm's logfile.py does the same).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_controls(text: str) -> str:
    """`text` on one line, every control character written out (`\\n`, `\\x1b`)."""
    return _CONTROL.sub(lambda m: _NAMED.get(m.group()) or _code(ord(m.group())), text)


def _code(point: int) -> str:
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def _private_dir(path: Path) -> Path:
    """Create `path` 0700 or vet it: a real directory of ours, not a symlink (a cloned
    repository can ship `.tsm/logs -> ~`); tightened to 0700 if an older tsm left it open.
    Mirrors tsm's statedir.private_dir, which the hooks cannot import."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if (
        stat.S_ISLNK(info.st_mode)
        or not stat.S_ISDIR(info.st_mode)
        or info.st_uid != os.getuid()
        or info.st_mode & stat.S_ISVTX
    ):  # S_ISVTX: like /tmp
        raise OSError(f"refusing to write in {path}: a symlink, not a folder, shared or not yours")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def _append_private(path: Path, data: bytes) -> None:
    """Append to `path`, created 0600, never through a symlink (O_NOFOLLOW), a FIFO
    (O_NONBLOCK fails at once) or a hard link to a file elsewhere."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_nlink > 1:
            raise OSError(f"refusing to write {path}: not a regular file of ours")
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o600)
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def run_hook(name: str, handle: Callable[[HookInput, Workspace], str | None]) -> None:
    """The boundary every hook runs in: `handle` returns stdout text or None; failures are
    logged; nothing but that text ever reaches stdout, and the exit status is always 0.
    """
    workspace: Workspace | None = None
    output: str | None = None
    try:
        data = read_hook_input(sys.stdin.buffer)
        workspace = find_workspace(input_cwd(data), os.environ)
        output = handle(data, workspace)
    except Exception as exc:  # noqa: BLE001 - the hook must never break the user's session
        message = str(exc) if isinstance(exc, HookFailure) else f"{type(exc).__name__}: {exc}"
        log_failure(workspace or _process_workspace(), name, message)
    if output:
        _write_stdout(output.encode("utf-8"))


def _process_workspace() -> Workspace | None:
    """The workspace of the process's own cwd, for failures before the input named one."""
    try:
        return find_workspace(Path.cwd(), os.environ)
    except OSError:
        return None


def _write_stdout(data: bytes) -> None:
    """Write straight to fd 1: no buffer left to flush (and fail) at interpreter exit."""
    try:
        while data:
            data = data[os.write(1, data) :]
    except OSError:
        pass
