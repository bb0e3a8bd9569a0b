"""The core's operations answered by a running daemon: one request per call over its Unix
socket, the reply mapped back to the core's dataclasses or to the TsmError the daemon
raised. Any trouble reaching the daemon raises `Unavailable`, which `client.connect`
answers by running the operation in-process."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..workspace import StatePaths
from . import protocol
from .fingerprint import settings_fingerprint
from .peer import foreign_uid

if TYPE_CHECKING:
    from ..config import Settings
    from ..core.context import ContextRequest, Injection
    from ..core.doctor import DoctorReport
    from ..core.knowledge import Status
    from ..core.reindex import ReindexReport
    from ..core.request import SearchRequest
    from ..indexing import IndexReport, Progress
    from ..models import SearchResult

CONNECT_TIMEOUT = 2.0
SEARCH_TIMEOUT = 60.0  # includes a cold model load in a just-started daemon
WRITE_TIMEOUT = 24 * 3600.0  # a first index of a large vault, embedding excluded
_FALLBACK_KINDS = {"config_mismatch", "bad_version"}


class Unavailable(Exception):
    """The daemon cannot serve this request; run it in-process instead."""


class ForeignDaemon(Unavailable):
    """The process on the socket runs as another user: never send it anything."""


def connect(path: Path, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
    """A connection to the daemon, once the kernel says it runs as this user."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        uid = foreign_uid(sock)
    except OSError as exc:
        sock.close()
        raise Unavailable(f"cannot connect to {path}: {exc}") from None
    if uid is not None:
        sock.close()
        raise ForeignDaemon(
            f"the daemon on {path} runs as uid {uid}, not as you "
            f"(uid {os.getuid()}); tsm ignores it and works in-process"
        )
    return sock


def call(path: Path, op: str, args: dict[str, Any], config: str | None, timeout: float) -> Any:
    """One request/reply. TsmErrors from the daemon are re-raised as themselves."""
    sock = connect(path)
    try:
        protocol.send(sock, protocol.request(op, args, config), timeout=CONNECT_TIMEOUT + 5)
        reply = protocol.receive(sock, protocol.MAX_REPLY_BYTES, timeout)
    except (OSError, TimeoutError, protocol.ConnectionClosed, protocol.ProtocolError) as exc:
        raise Unavailable(f"daemon at {path} did not answer: {type(exc).__name__}: {exc}") from None
    finally:
        sock.close()
    if reply.get("ok"):
        return reply.get("result")
    error = reply.get("error") or {}
    if error.get("kind") in _FALLBACK_KINDS:
        raise Unavailable(error.get("message", "daemon refused the request"))
    raise _as_tsm_error(error)


def _as_tsm_error(error: dict[str, Any]) -> errors.TsmError:
    cls = getattr(errors, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.TsmError)):
        cls = errors.UserError if error.get("exit_code") == 1 else errors.SystemFailure
    return cls(str(error.get("message", "daemon error")), error.get("hint"))


class RemoteKnowledge:
    """The core's Knowledge, answered by the daemon. Progress is not reported: the daemon
    indexes on its writer thread and embeds in the background."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.paths = StatePaths(settings.state_dir)
        self.config = settings_fingerprint(settings)

    def _call(self, op: str, args: dict[str, Any], timeout: float = WRITE_TIMEOUT) -> Any:
        return call(self.paths.socket, op, args, self.config, timeout)

    def search(self, request: SearchRequest) -> SearchResult:
        from ..render.json_format import search_from_dict

        data = self._call("search", {"request": request.to_wire()}, SEARCH_TIMEOUT)
        return search_from_dict(data)

    def index(
        self, paths: Any = (), *, embed: bool = True, progress: Progress | None = None
    ) -> IndexReport:
        absolute = [os.path.abspath(os.path.expanduser(p)) for p in paths]
        data = self._call("index", {"paths": absolute, "no_embed": not embed})
        return _index_report(data)

    def ingest_session(self, path: Path, progress: Progress | None = None) -> IndexReport:
        data = self._call("ingest_session", {"path": os.path.abspath(os.path.expanduser(path))})
        return _index_report(data)

    def reindex(self, target: str, progress: Progress | None = None) -> ReindexReport:
        from ..core.reindex import ReindexReport

        return ReindexReport(**self._call("reindex", {"target": target}))

    def status(self) -> Status:
        from ..core.knowledge import Status

        return Status.from_json(self._call("status", {}, SEARCH_TIMEOUT))

    def doctor(self) -> DoctorReport:
        from ..core.doctor import DoctorReport

        return DoctorReport.from_json(self._call("doctor", {}, SEARCH_TIMEOUT * 5))

    def context(self, request: ContextRequest) -> Injection:
        from ..core.context import Injection

        data = self._call("context", {"request": request.to_wire()}, SEARCH_TIMEOUT)
        return Injection.from_json(data)

    def close(self) -> None:
        pass  # one connection per call


def _index_report(data: dict[str, Any]) -> IndexReport:
    from dataclasses import fields

    from ..indexing import IndexReport

    known = {f.name for f in fields(IndexReport)}
    return IndexReport(**{k: v for k, v in data.items() if k in known})
