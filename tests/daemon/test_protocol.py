"""Frames on a socket pair: round trip, size limit, malformed bodies, deadlines."""

from __future__ import annotations

import socket

import pytest

from tsm.client import protocol


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def test_a_frame_round_trips_unicode() -> None:
    a, b = pair()
    with a, b:
        protocol.send(a, protocol.request("search", {"q": "狩猟 🦌"}), timeout=1)
        message = protocol.receive(b, protocol.MAX_REQUEST_BYTES, timeout=1)
    assert message == {"v": 2, "op": "search", "args": {"q": "狩猟 🦌"}, "config": None}


def test_an_oversized_header_is_refused_before_reading_the_body() -> None:
    a, b = pair()
    with a, b:
        a.sendall((protocol.MAX_REQUEST_BYTES + 1).to_bytes(4, "big"))
        with pytest.raises(protocol.FrameTooLarge):
            protocol.receive(b, protocol.MAX_REQUEST_BYTES, timeout=1)


@pytest.mark.parametrize("body", [b"not json", b"\xff\xfe", b"[1, 2]", b'"text"'])
def test_a_body_that_is_not_a_json_object_is_malformed(body: bytes) -> None:
    a, b = pair()
    with a, b:
        a.sendall(len(body).to_bytes(4, "big") + body)
        with pytest.raises(protocol.MalformedFrame):
            protocol.receive(b, protocol.MAX_REQUEST_BYTES, timeout=1)


def test_a_silent_peer_times_out_and_a_closed_one_is_reported() -> None:
    a, b = pair()
    with a, b:
        a.sendall(b"\x00\x00")  # half a header, then nothing
        with pytest.raises(TimeoutError):
            protocol.receive(b, protocol.MAX_REQUEST_BYTES, timeout=0.2)
        a.close()
        with pytest.raises(protocol.ConnectionClosed):
            protocol.receive(b, protocol.MAX_REQUEST_BYTES, timeout=1)
