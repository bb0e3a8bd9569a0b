"""A real `python -m tsm daemon` on a short socket path, and the real CLI next to it.

UNIX socket paths are limited to ~107 bytes, and pytest's tmp_path can be longer, so each
daemon gets a fresh directory directly under the system temp dir. Teardown terminates the
daemon, kills it if it does not exit, and removes the directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from patience import patience, scaled  # noqa: E402
from sample_vault import copy_tracked  # noqa: E402


class Run:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.code, self.out, self.err = proc.returncode, proc.stdout, proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def error(self) -> dict[str, Any]:
        lines = [line for line in self.err.splitlines() if line.startswith("{")]
        assert len(lines) == 1, self.err
        return dict(json.loads(lines[0]))


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll until `predicate()` is truthy; fail with `what` after `timeout` seconds of a quiet
    machine, stretched by the highest load per core seen while waiting (patience.py): the
    daemon embeds at a low priority, which a busy machine starves."""
    started = time.monotonic()
    stretch = patience()
    while True:
        value = predicate()
        if value:
            return value
        stretch = max(stretch, patience())
        waited = time.monotonic() - started
        if waited > timeout * stretch:
            raise AssertionError(
                f"timed out after {waited:.0f}s (load {os.getloadavg()[0]:.1f}) waiting for {what}"
            )
        time.sleep(interval)


class Harness:
    """One vault (copied), its state dir, and at most one daemon process."""

    def __init__(
        self, template: Path | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        """A copy of `template` (default: the sample vault); processes get `environ`
        (default: os.environ, which the autouse `isolated_env` fixture has cleaned)."""
        self.dir = Path(tempfile.mkdtemp(prefix="tsmd", dir="/tmp"))
        self.root = self.dir / "v"
        if template is None:
            copy_tracked(self.root)  # the sample vault
        else:
            shutil.copytree(template, self.root)
        self.state = self.root / ".tsm"
        self.socket = self.state / "tsmd.sock"
        self.env = {
            **(os.environ if environ is None else environ),
            "TSM_INDEX_ROOT": str(self.root),
            "TSM_AUTOSTART": "0",
        }
        self.env.pop("TSM_STATE_DIR", None)
        self.env.pop("TSM_DB_PATH", None)
        self.proc: subprocess.Popen[bytes] | None = None

    # -- processes ------------------------------------------------------------------------
    def cli(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 300,
        input: str | None = None,
    ) -> Run:
        proc = subprocess.run(
            [sys.executable, "-m", "tsm", *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={**self.env, **(env or {})},
            timeout=scaled(timeout),
            input=input,
        )
        return Run(proc)

    def popen_cli(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "tsm", *args],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def start(self, *extra: str, timeout: float = 60, nofile: int | None = None) -> None:
        """Start `python -m tsm daemon EXTRA…`; `nofile`: its soft descriptor limit."""
        log = open(self.dir / "daemon.out", "ab")  # noqa: SIM115 - lives as long as the daemon
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tsm", "daemon", *extra],
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            preexec_fn=None if nofile is None else lambda: _limit_descriptors(nofile),
        )
        log.close()
        try:
            wait_for(self.answers, timeout, "the daemon to answer")
            # Until then a search answers from its keywords alone (search/engine.py), and
            # the tests compare the daemon's answers with the in-process core's.
            wait_for(self.warm, timeout, "the daemon to load its model and vectors")
        except AssertionError as failure:
            raise AssertionError(f"{failure}; the daemon's log ends:\n{self.log_tail()}") from None

    def log_tail(self, lines: int = 40) -> str:
        """The end of the daemon's log and of its output, for a failure's message."""
        parts = []
        for path in (self.state / "logs" / "tsmd.log", self.dir / "daemon.out"):
            try:
                text = path.read_text("utf-8", errors="replace")
            except OSError as error:
                text = f"(unreadable: {error})"
            parts.append(f"-- {path.name}:\n" + "\n".join(text.splitlines()[-lines:]))
        return "\n".join(parts)

    def answers(self) -> bool:
        try:
            self.request({"v": 2, "op": "ping", "args": {}})
            return True
        except OSError:
            return False

    def warm(self) -> bool:
        return bool(self.request({"v": 2, "op": "ping", "args": {}})["result"].get("warm"))

    def status(self) -> dict[str, Any]:
        result = self.cli("status", "-f", "json", timeout=60)
        assert result.code == 0, result.err
        return dict(result.json())

    def stop(self) -> None:
        """terminate → kill; then whatever daemon a test started by other means."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(scaled(15))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        pid = self.pid()
        if pid is not None:
            self.cli("stop", "-f", "json", timeout=60)
            _kill(pid)
        self.socket.unlink(missing_ok=True)

    def pid(self) -> int | None:
        try:
            return int((self.state / "tsmd.pid").read_text())
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- raw protocol ---------------------------------------------------------------------
    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(str(self.socket))
        return sock

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        with self.connect() as sock:
            body = json.dumps(message).encode()
            sock.sendall(len(body).to_bytes(4, "big") + body)
            return read_frame(sock)


def read_frame(sock: socket.socket) -> dict[str, Any]:
    head = recv_exact(sock, 4)
    return dict(json.loads(recv_exact(sock, int.from_bytes(head, "big"))))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def _limit_descriptors(soft: int) -> None:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def comparable(search_json: dict[str, Any]) -> dict[str, Any]:
    """A search result without what legitimately differs between runs."""
    return {k: v for k, v in search_json.items() if k not in ("took_ms", "warnings")}
