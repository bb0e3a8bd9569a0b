"""The daemon's wire format: versioned, 4-byte length-prefixed JSON frames (stdlib only).

A frame is a big-endian unsigned 32-bit length followed by that many bytes of UTF-8 JSON.
Requests are `{"v": 1, "op": ..., "args": {...}, "config": ...}`; replies are
`{"v": 1, "ok": true, "result": ...}` or `{"v": 1, "ok": false, "error": {...}}`. Sizes are
capped on both sides so a garbage header cannot make either side allocate gigabytes, and every
read has a deadline so neither side hangs on a silent peer.
"""

from __future__ import annotations

import json
import socket
import struct
import time

TYPE_CHECKING = False  # importing typing costs the thin client (cli/entry.py) a few ms
if TYPE_CHECKING:
    from typing import Any

VERSION = 2  # 2: searches carry a SearchRequest (core/request.py)
MAX_REQUEST_BYTES = 1 * 1024 * 1024  # a query, or a list of paths to index
MAX_REPLY_BYTES = 256 * 1024 * 1024  # `--include-content` can carry whole documents
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame; `kind` names what."""

    kind = "protocol_error"


class FrameTooLarge(ProtocolError):
    """The announced frame length exceeds the limit; the stream cannot be resynchronised."""

    kind = "frame_too_large"


class MalformedFrame(ProtocolError):
    """The frame body is not UTF-8 JSON holding an object."""

    kind = "malformed_frame"


class ConnectionClosed(Exception):
    """The peer closed the connection (possibly in the middle of a frame)."""


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _HEADER.pack(len(body)) + body


def send(sock: socket.socket, message: dict[str, Any], timeout: float | None = None) -> None:
    """Write one frame; `timeout` bounds the whole write."""
    sock.settimeout(timeout)
    sock.sendall(encode(message))


def _read_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out reading a frame")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ConnectionClosed("connection closed by peer")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, max_bytes: int, timeout: float | None = None) -> dict[str, Any]:
    """Read one frame and decode it. Raises ConnectionClosed, TimeoutError, FrameTooLarge or
    MalformedFrame; `timeout` bounds the whole frame, not each recv()."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (length,) = _HEADER.unpack(_read_exact(sock, _HEADER.size, deadline))
    if length > max_bytes:
        raise FrameTooLarge(f"frame of {length} bytes exceeds the limit of {max_bytes}")
    body = _read_exact(sock, length, deadline)
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedFrame(f"frame is not UTF-8 JSON: {exc}") from None
    except RecursionError:  # `[[[…]]]` 100,000 deep fits in a frame: json recurses per level
        raise MalformedFrame("frame is JSON nested too deeply") from None
    if not isinstance(message, dict):
        raise MalformedFrame("frame is not a JSON object")
    return message


def request(op: str, args: dict[str, Any], config: str | None = None) -> dict[str, Any]:
    return {"v": VERSION, "op": op, "args": args, "config": config}


def ok(result: Any) -> dict[str, Any]:
    return {"v": VERSION, "ok": True, "result": result}


def error(
    message: str,
    *,
    kind: str,
    exit_code: int = 2,
    hint: str | None = None,
    error_type: str = "SystemFailure",
) -> dict[str, Any]:
    """An error reply. `error_type` names the TsmError class the client re-raises."""
    return {
        "v": VERSION,
        "ok": False,
        "error": {
            "message": message,
            "hint": hint,
            "kind": kind,
            "exit_code": exit_code,
            "type": error_type,
        },
    }
