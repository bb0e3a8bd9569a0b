"""start / stop / restart, auto-start, status and doctor with and without a daemon, stale
files, reindex and rebuild."""

from __future__ import annotations

import concurrent.futures
import os
import sqlite3
import stat
import subprocess

from daemon_harness import Harness, wait_for


def test_start_stop_restart_json(harness: Harness) -> None:
    started = harness.cli("start", "-f", "json", timeout=120)
    assert started.code == 0, started.err
    first = started.json()
    assert first["started"] is True and first["pid"] == harness.pid()
    assert stat.S_IMODE(os.stat(harness.socket).st_mode) == 0o600
    again = harness.cli("start", "-f", "json").json()
    assert again == {
        "started": False,
        "running": True,
        "pid": first["pid"],
        "socket": str(harness.socket),
    }
    restarted = harness.cli("restart", "-f", "json", timeout=120).json()
    assert restarted["previous_pid"] == first["pid"] and restarted["pid"] != first["pid"]
    stopped = harness.cli("stop", "-f", "json", timeout=60).json()
    assert stopped["stopped"] is True
    assert not harness.socket.exists() and harness.pid() is None
    assert harness.cli("stop", "-f", "json").json()["stopped"] is False


def test_search_auto_starts_one_daemon_even_when_raced(harness: Harness) -> None:
    env = {"TSM_AUTOSTART": "1"}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = list(
            pool.map(
                lambda _: harness.cli("search", "install git", "-f", "json", env=env), range(4)
            )
        )
    for run in runs:
        assert run.code == 0, run.err
        assert run.json()["results"][0]["source"]["path"] == "notes/git-install.md"
    pid = wait_for(harness.pid, 30, "the auto-started daemon's pid file")
    status = harness.status()
    assert status["daemon"]["state"] == "running" and status["daemon"]["pid"] == pid
    daemons = subprocess.run(
        ["pgrep", "-f", "-x", ".*-m tsm daemon"], capture_output=True, text=True
    ).stdout.split()
    ours = [p for p in daemons if f"TSM_INDEX_ROOT={harness.root}" in _environ(int(p))]
    assert ours == [str(pid)]


def _environ(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().replace(b"\0", b"\n").decode(errors="replace")
    except OSError:
        return ""


def test_status_and_doctor_without_a_daemon_report_stale_files(harness: Harness) -> None:
    (harness.state / "tsmd.pid").write_text("999999\n")
    status = harness.status()
    assert status["daemon"]["state"] == "stale"
    assert status["total_documents"] > 0
    doctor = harness.cli("doctor", "-f", "json")
    assert doctor.code == 0, doctor.err
    report = doctor.json()
    by_name = {s["name"]: s["items"] for s in report["sections"]}
    assert set(by_name) >= {"database", "daemon", "embedder", "vectors", "paths"}
    assert by_name["database"][0] == {
        "name": "integrity",
        "status": "ok",
        "message": "PRAGMA quick_check: ok",
        "fix": None,
    }
    assert by_name["daemon"][0]["status"] == "warn" and "tsm start" in by_name["daemon"][0]["fix"]
    assert report["issue_count"] == sum(
        1 for items in by_name.values() for i in items if i["status"] != "ok"
    )
    started = harness.cli("start", "-f", "json", timeout=120)
    assert started.code == 0, started.err
    assert harness.pid() != 999999


def test_doctor_through_the_daemon(daemon: Harness) -> None:
    report = daemon.cli("doctor", "-f", "json").json()
    items = {s["name"]: s["items"] for s in report["sections"]}
    assert items["daemon"][0]["status"] == "ok" and "running" in items["daemon"][0]["message"]
    assert items["vectors"][0]["name"] == "coverage" and items["vectors"][0]["status"] == "ok"
    human = daemon.cli("doctor", "-f", "human")
    assert "integrity" in human.out and human.code == 0


def test_a_daemon_with_other_settings_is_not_reported_as_serving_this_command(
    daemon: Harness,
) -> None:
    """A daemon started before the user set TSM_STORE_URL (or any setting) serves none of
    their commands: `start`, `status` and `doctor` say so, not just "running"."""
    other = {"TSM_TOP_K": "3"}  # any setting the daemon was not started with
    again = daemon.cli("start", "-f", "json", env=other).json()
    assert again["started"] is False and again["other_settings"] is True
    assert "other settings" in daemon.cli("start", "-f", "human", env=other).out
    assert daemon.cli("status", "-f", "json", env=other).json()["daemon"]["other_settings"]
    report = daemon.cli("doctor", "-f", "json", env=other).json()
    check = {s["name"]: s["items"] for s in report["sections"]}["daemon"][0]
    assert check["status"] == "warn" and "tsm restart" in check["fix"], check
    same = daemon.cli("start", "-f", "json").json()
    assert same["started"] is False and "other_settings" not in same
    assert "other_settings" not in daemon.cli("status", "-f", "json").json()["daemon"]


def test_status_sections_through_the_daemon(daemon: Harness) -> None:
    status = daemon.status()
    assert status["daemon"]["state"] == "running"
    assert status["embedder"]["state"] in ("starting", "ready")
    assert status["watcher"]["state"] in ("starting", "watching")
    assert status["queue"]["writer_jobs"] >= 0
    assert status["queue"]["chunks_without_vectors"] == 0


def test_reindex_through_the_daemon_runs_in_the_background(daemon: Harness) -> None:
    fts = daemon.cli("reindex", "fts", "-f", "json")
    assert fts.code == 0, fts.err
    assert fts.json()["background"] is True and fts.json()["fts_documents"] > 0
    vec = daemon.cli("reindex", "vectors", "-f", "json").json()
    assert vec["vectors_dropped"] > 0
    keyword = daemon.cli("search", "install git", "--fts-only", "-f", "json")
    assert keyword.json()["results"][0]["source"]["path"] == "notes/git-install.md"

    def refilled() -> bool:
        return daemon.status()["queue"]["chunks_without_vectors"] == 0

    wait_for(refilled, 240, "the backfill to embed every chunk again", interval=1)
    hybrid = daemon.cli("search", "install git", "-f", "json").json()
    assert hybrid["mode"] == "hybrid" and hybrid["results"][0]["score_breakdown"]["vector"]


def test_reindex_fts_without_a_daemon(harness: Harness) -> None:
    result = harness.cli("reindex", "fts", "-f", "json")
    assert result.code == 0, result.err
    assert result.json()["background"] is False
    search = harness.cli("search", "狩猟", "--fts-only", "-f", "json").json()
    assert search["results"]


def test_rebuild_dry_run_then_apply_stops_the_daemon_and_keeps_a_backup(daemon: Harness) -> None:
    plan = daemon.cli("rebuild", "-f", "json").json()
    assert plan["apply"] is False and plan["daemon"] == "running"
    assert not list(daemon.state.glob("tsm.db.bak-*"))
    result = daemon.cli("rebuild", "--apply", "-f", "json", timeout=300)
    assert result.code == 0, result.err
    data = result.json()
    assert data["daemon_stopped"] is True and data["embedded"] == 0  # vectors reused
    backups = list(daemon.state.glob("tsm.db.bak-*"))
    assert len(backups) == 1
    old = sqlite3.connect(backups[0])
    assert old.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert old.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == data["indexed"]
    old.close()
    daemon.proc = None
    search = daemon.cli("search", "install git", "-f", "json")
    assert search.code == 0 and search.json()["mode"] == "hybrid"


def test_a_changed_tsm_toml_retires_the_daemon(daemon: Harness) -> None:
    (daemon.root / "tsm.toml").write_text("[search]\nrrf_k = 30\n", encoding="utf-8")
    result = daemon.cli("search", "install git", "-f", "json")
    assert result.code == 0, result.err  # answered in-process, with the new settings
    assert daemon.proc is not None
    daemon.proc.wait(30)  # the old daemon stepped aside
    assert not daemon.socket.exists()
    restarted = daemon.cli("search", "install git", "-f", "json", env={"TSM_AUTOSTART": "1"})
    assert restarted.code == 0, restarted.err
    wait_for(daemon.pid, 30, "a new daemon")
    assert daemon.status()["daemon"]["searches"] >= 1
