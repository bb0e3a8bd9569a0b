"""Wrongly typed request arguments on the daemon's socket are the client's error:
a `user_error` reply with exit code 1, never a crash of the op or a system error,
and the daemon keeps answering."""

from __future__ import annotations

from typing import Any

from daemon_harness import Harness

HUGE = 10**30
# For every op that takes a number, a path or a flag: each wrong shape of JSON value.
BAD_ARGS: list[tuple[str, dict[str, Any]]] = [
    *[
        ("search", {"request": {"text": "git", "top_k": value}})
        for value in (HUGE, -HUGE, -1, 0, 1.5, "3", True, [3], {"n": 3})  # None: the default
    ],
    *[
        ("search", {"request": {"text": "git", "include_content": value}})
        for value in (-1, 1.5, "2", [1], {"n": 1})
    ],
    *[("search", {"request": {"text": value}}) for value in (3, 1.5, ["git"], {"q": "git"})],
    *[
        ("search", {"request": {"text": "git", name: value}})
        for name in ("paths", "tags", "types")
        for value in ("notes", [3], [["a"]], {"a": 1})
    ],
    *[
        ("search", {"request": {"text": "git", name: value}})
        for name in ("after", "before", "recent", "year")
        for value in (2025, HUGE, [1], {})
    ],
    ("search", {"request": {"text": "git", "unknown": 1}}),
    ("search", {"request": "git"}),
    ("search", {"request": {"top_k": 3}}),  # no text
    *[
        ("search", {"request": {"text": "git", "now": value}})
        for value in (HUGE, 1.5, "not a date", ["2026"], {"y": 1})
    ],
    *[("ingest_session", {"path": value}) for value in (None, HUGE, 1.5, ["a"], {"p": 1}, "")],
    ("ingest_session", {}),
    *[("index", {"paths": value}) for value in ("notes", HUGE, [1], [["a"]], {"a": 1})],
    ("index", {"paths": [], "no_embed": "yes"}),
    *[("reindex", {"target": value}) for value in (None, HUGE, 1.5, ["all"], {"t": "all"})],
]


def test_wrongly_typed_arguments_are_user_errors(daemon: Harness) -> None:
    config = daemon.request({"v": 2, "op": "ping", "args": {}})["result"]["config"]
    for op, args in BAD_ARGS:
        reply = daemon.request({"v": 2, "op": op, "args": args, "config": config})
        assert reply["ok"] is False, (op, args, reply)
        error = reply["error"]
        assert error["kind"] == "user_error" and error["exit_code"] == 1, (op, args, error)
        assert "Traceback" not in error["message"]
    ok = daemon.request(
        {
            "v": 2,
            "op": "search",
            "config": config,
            "args": {"request": {"text": "install git", "top_k": 1}},
        }
    )
    assert ok["ok"] is True and ok["result"]["returned"] == 1
