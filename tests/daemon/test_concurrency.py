"""Many clients at once: concurrent searches, two indexing CLIs, searches during indexing."""

from __future__ import annotations

import concurrent.futures
import json

import pytest
from daemon_harness import Harness, read_frame

QUERIES = ["install git", "狩猟免許", "lora", "shell setup", "sqlite decision"]


def make_notes(h: Harness, folder: str, count: int) -> None:
    target = h.root / folder
    target.mkdir()
    for i in range(count):
        (target / f"{folder}{i:03d}.md").write_text(
            f"# {folder} note {i}\n\nkeyword{folder} {i}\n", encoding="utf-8"
        )


def listed(h: Harness) -> set[str]:
    return {d["path"] for d in h.cli("list", "-f", "json").json()}


def test_50_concurrent_searches_all_succeed(daemon: Harness) -> None:
    daemon.cli("search", "warm up", "-f", "json")
    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        runs = list(
            pool.map(
                lambda i: daemon.cli(
                    "search", QUERIES[i % len(QUERIES)], "-f", "json", timeout=120
                ),
                range(50),
            )
        )
    for run in runs:
        assert run.code == 0, run.err
        data = run.json()
        assert data["results"] and data["mode"] == "hybrid"
    assert daemon.status()["daemon"]["searches"] >= 51


@pytest.mark.parametrize("with_daemon", [True, False], ids=["daemon", "in-process"])
def test_two_clis_indexing_at_once(harness: Harness, with_daemon: bool) -> None:
    if with_daemon:
        harness.start("--no-watch")  # the two CLIs, not the watcher, must do the work
    make_notes(harness, "left", 60)
    make_notes(harness, "right", 60)
    procs = [
        harness.popen_cli("index", folder, "--no-embed", "-f", "json")
        for folder in ("left", "right")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out)["indexed"] == 60
    paths = listed(harness)
    assert sum(p.startswith("left/") for p in paths) == 60
    assert sum(p.startswith("right/") for p in paths) == 60
    hit = harness.cli("search", "keywordright 7", "--fts-only", "-f", "json").json()
    assert hit["results"][0]["source"]["path"].startswith("right/")


def test_searches_answer_while_a_long_index_job_runs(daemon: Harness) -> None:
    make_notes(daemon, "big", 300)
    indexer = daemon.popen_cli("index", "big", "-f", "json")
    runs = [daemon.cli("search", q, "-f", "json", timeout=60) for q in QUERIES]
    for run in runs:
        assert run.code == 0, run.err
    out, err = indexer.communicate(timeout=300)
    assert indexer.returncode == 0, err


def raw_search(h: Harness, text: str) -> dict:
    from tsm.client.fingerprint import settings_fingerprint
    from tsm.config import load

    settings = load(environ=h.env)
    message = {
        "v": 2,
        "op": "search",
        "args": {"request": {"text": text, "top_k": 5}},
        "config": settings_fingerprint(settings),
    }
    with h.connect() as sock:
        sock.settimeout(120)
        body = json.dumps(message).encode()
        sock.sendall(len(body).to_bytes(4, "big") + body)
        return read_frame(sock)


@pytest.mark.slow
def test_a_storm_of_200_concurrent_clients(daemon: Harness) -> None:
    daemon.cli("search", "warm up", "-f", "json")
    with concurrent.futures.ThreadPoolExecutor(200) as pool:
        replies = list(
            pool.map(lambda i: raw_search(daemon, QUERIES[i % len(QUERIES)]), range(200))
        )
        clis = list(
            pool.map(
                lambda i: daemon.cli(
                    "search", QUERIES[i % len(QUERIES)], "-f", "json", timeout=300
                ),
                range(40),
            )
        )
    assert all(r["ok"] and r["result"]["results"] for r in replies)
    assert all(run.code == 0 for run in clis), [r.err for r in clis if r.code]
    assert daemon.status()["daemon"]["searches"] >= 241
