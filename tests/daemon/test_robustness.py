"""Garbage on the socket, a killed embedding worker, a daemon killed mid-index."""

from __future__ import annotations

import os
import signal
import sqlite3
import time

from daemon_harness import Harness, read_frame, wait_for


def send_raw(h: Harness, data: bytes) -> dict:
    with h.connect() as sock:
        sock.sendall(data)
        return read_frame(sock)


def search_works(h: Harness) -> None:
    result = h.cli("search", "install git", "-f", "json")
    assert result.code == 0, result.err
    assert result.json()["results"][0]["source"]["path"] == "notes/git-install.md"


def test_garbage_and_oversized_frames_get_an_error_reply(daemon: Harness) -> None:
    cases = {
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n": "frame_too_large",  # "GET " is a huge length
        (5 * 1024 * 1024).to_bytes(4, "big") + b"x" * 1000: "frame_too_large",
        (8).to_bytes(4, "big") + b"not json": "malformed_frame",
        (6).to_bytes(4, "big") + b"[1, 2]": "malformed_frame",
        (4).to_bytes(4, "big") + b"\xff\xfe\xfd\xfc": "malformed_frame",
        # a RecursionError in json: the connection's thread died with a traceback, no reply
        (200_000).to_bytes(4, "big") + b"[" * 100_000 + b"]" * 100_000: "malformed_frame",
        (200_024).to_bytes(4, "big")
        + b'{"v": 2, "op": "ping", "args": '
        + b"[" * 99_996
        + b"]" * 99_996
        + b"}": "malformed_frame",
    }
    for data, kind in cases.items():
        reply = send_raw(daemon, data)
        assert reply["ok"] is False and reply["error"]["kind"] == kind, (data[:20], reply)
    assert daemon.request({"v": 2, "op": "nope", "args": {}})["error"]["kind"] == "bad_request"
    assert daemon.request({"v": 99, "op": "ping", "args": {}})["error"]["kind"] == "bad_version"
    reply = daemon.request({"v": 2, "op": "ping", "args": "not an object"})
    assert reply["ok"] is False and reply["error"]["exit_code"] == 1
    # the thin client's forwarded command line (cli/entry.py), malformed in several ways
    for args in (
        {"argv": "search x", "env": {}, "cwd": "/"},
        {"argv": ["search", 3], "env": {}, "cwd": "/"},
        {"argv": ["search", "x"], "env": [], "cwd": "/"},
        {"argv": ["search", "x"], "env": {}},
    ):
        reply = daemon.request({"v": 2, "op": "cli", "args": args})
        assert reply["ok"] is False and reply["error"]["exit_code"] == 1, (args, reply)
    # well formed, but not a search, or another index: the client runs the full CLI instead
    for argv, cwd in ((["index"], str(daemon.root)), (["search", "git"], "/")):
        reply = daemon.request(
            {
                "v": 2,
                "op": "cli",
                "args": {
                    "argv": argv,
                    "cwd": cwd,
                    "env": {"TSM_NO_USER_CONFIG": "1"},
                    "tty": False,
                },
            }
        )
        assert reply == {"v": 2, "ok": True, "result": None}, reply
    # a client that connects and says nothing, and one that sends half a frame, then leave
    daemon.connect().close()
    with daemon.connect() as sock:
        sock.sendall(b"\x00\x00")
    assert daemon.proc is not None and daemon.proc.poll() is None
    search_works(daemon)


def query_worker(status: dict) -> dict:
    return next(w for w in status["embedder"]["workers"] if w["role"] == "query")


def test_a_killed_embedder_means_keyword_results_or_exit_2_and_no_restart_loop(
    daemon: Harness,
) -> None:
    search_works(daemon)  # the query worker is loaded
    worker = query_worker(daemon.status())
    assert worker["state"] == "ready"
    os.kill(worker["pid"], signal.SIGKILL)

    fts = daemon.cli("search", "install git", "--fallback", "fts-only", "-f", "json")
    assert fts.code == 0, fts.err
    data = fts.json()
    assert data["mode"] == "fts"
    assert data["results"][0]["score_breakdown"]["vector"] is None
    assert any("vector search unavailable" in w for w in data["warnings"])

    plain = daemon.cli("search", "install git", "-f", "json")  # --fallback auto
    assert plain.code == 0 and plain.json()["mode"] == "fts", plain.err
    strict = daemon.cli("search", "install git", "--fallback", "error", "-f", "json")
    assert strict.code == 2
    error = strict.error()
    assert error["kind"] == "system_error" and "tsm restart" in error["error"]
    assert "Traceback" not in strict.err

    status = daemon.status()
    assert status["embedder"]["state"] == "crashed"
    assert "SIGKILL" in query_worker(status)["detail"]
    doctor = daemon.cli("doctor", "-f", "json").json()
    embedder_items = next(s for s in doctor["sections"] if s["name"] == "embedder")["items"]
    assert any(i["status"] == "error" and "restart" in i["fix"] for i in embedder_items)
    assert doctor["issue_count"] >= 1

    time.sleep(1.5)  # no restart loop: the same dead worker, still reported as crashed
    again = query_worker(daemon.status())
    assert (again["pid"], again["state"]) == (worker["pid"], "crashed")

    restarted = daemon.cli("restart", "-f", "json", timeout=120)
    assert restarted.code == 0, restarted.err
    daemon.proc = None  # the restarted daemon is not our child; teardown stops it by pid
    search_works(daemon)
    assert daemon.status()["embedder"]["state"] == "ready"


def make_notes(h: Harness, folder: str, count: int, words: str = "bulk note") -> None:
    target = h.root / folder
    target.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (target / f"n{i:04d}.md").write_text(
            f"# {words} {i}\n\n" + f"Paragraph {i} about {words} number {i}.\n\n" * 20,
            encoding="utf-8",
        )


def test_kill_9_mid_index_leaves_a_consistent_db_and_the_next_start_recovers(
    harness: Harness,
) -> None:
    make_notes(harness, "bulk", 400)
    harness.start("--no-watch")
    indexer = harness.popen_cli("index", "bulk", "--no-embed", "-f", "json")
    db = sqlite3.connect(harness.state / "tsm.db")

    def indexing_has_begun() -> bool:
        return (
            db.execute("SELECT COUNT(*) FROM documents WHERE path LIKE 'bulk/%'").fetchone()[0] > 10
        )

    wait_for(indexing_has_begun, 120, "the daemon to start indexing", interval=0.02)
    assert harness.proc is not None
    harness.proc.kill()
    harness.proc.wait()
    db.close()
    # The CLI noticed and finished the job in-process: the user's command did not fail.
    out, err = indexer.communicate(timeout=300)
    assert indexer.returncode == 0, err
    assert (harness.state / "tsmd.sock").exists() and (harness.state / "tsmd.pid").exists()

    harness.start()
    log = (harness.state / "logs" / "tsmd.log").read_text()
    assert "removed stale" in log
    check = sqlite3.connect(harness.state / "tsm.db")
    assert check.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert (
        check.execute("SELECT COUNT(*) FROM documents WHERE path LIKE 'bulk/%'").fetchone()[0]
        == 400
    )
    check.close()
    search_works(harness)
    result = harness.cli("search", "bulk note 123", "--fts-only", "-f", "json").json()
    assert result["results"]
