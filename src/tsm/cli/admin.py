"""`tsm status`, `tsm doctor`, `tsm start`, `tsm stop`, `tsm restart` and the internal
`tsm daemon` (the resident process itself, normally started by `tsm start` or a search)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..errors import DaemonUnreachable
from .runtime import emit, knowledge, load_settings

if TYPE_CHECKING:
    from ..core.doctor import DoctorReport

START_WAIT = 30.0


def register(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "status",
        parents=[parent],
        help="index counts, model, schema; daemon, embedder, watcher and queue",
    )
    p.set_defaults(handler=run_status)
    p = sub.add_parser(
        "doctor",
        parents=[parent],
        help="check the index, daemon, embedder and paths; suggest fixes",
        description="Check the index, daemon, embedder and paths and print a "
        "fix for each problem. Exit 0 when no check reports an error "
        "(warnings allowed), 2 when one does.",
    )
    p.set_defaults(handler=run_doctor)
    p = sub.add_parser(
        "start", parents=[parent], help="start the resident daemon (fast searches, file watching)"
    )
    p.set_defaults(handler=run_start)
    p = sub.add_parser("stop", parents=[parent], help="stop the resident daemon")
    p.set_defaults(handler=run_stop)
    p = sub.add_parser(
        "restart",
        parents=[parent],
        help="restart the daemon (reloads settings and a crashed model)",
    )
    p.set_defaults(handler=run_restart)
    # No help= keeps it out of `tsm --help`: users run `tsm start`, which runs this.
    p = sub.add_parser(
        "daemon",
        description="Run the daemon in the foreground (internal: "
        "`tsm start` and searches launch it detached).",
    )
    p.add_argument("--no-watch", action="store_true", help="do not watch the index root")
    p.set_defaults(handler=run_daemon)


def run_status(args: argparse.Namespace) -> int:
    from ..render.human_format import status as status_text

    client = knowledge()
    status = client.status().as_json()
    if client.foreign_daemon:  # another user's process on our socket: said, then ignored
        print(f"tsm: warning: {status['daemon'].get('warning')}", file=sys.stderr)
    from ..render.terminal import Terminal

    emit(args, status, status_text(status, terminal=Terminal.detect()))
    return 0


def run_doctor(args: argparse.Namespace) -> int:
    report = knowledge().doctor()
    emit(args, report.as_json(), doctor_text(report))
    errors = report.error_count
    if not errors:
        return 0  # warnings alone are advice, not failures
    # Exit 2 (a system problem was found) so scripts and CI can tell; the report is on stdout.
    from ..errors import SystemFailure
    from ..render.errors import error_text

    print(
        error_text(
            SystemFailure(f"doctor found {errors} error(s)", "see the fixes above"), args.output
        ),
        file=sys.stderr,
    )
    return 2


def doctor_text(report: DoctorReport) -> str:
    from ..render.human_format import one_line

    marks = {"ok": "ok   ", "warn": "WARN ", "error": "ERROR"}
    lines = []
    for section in report.sections:
        lines.append(f"{section.name}:")
        for check in section.checks:
            mark = marks.get(check.status, check.status)
            # one line each: a message may quote a path or value a repository chose
            lines.append(f"  {mark} {one_line(check.name)}: {one_line(check.message)}")
            if check.fix and check.status != "ok":
                lines.append(f"        fix: {one_line(check.fix)}")
    count = report.issue_count
    lines.append("no issues found" if not count else f"{count} issue(s) found")
    return "\n".join(lines)


def run_start(args: argparse.Namespace) -> int:
    from ..client.lifecycle import daemon_state, ensure_started

    settings = load_settings()
    before = daemon_state(settings)
    if before["state"] == "running":
        data = {"started": False, "running": True, "pid": before["pid"], "socket": before["socket"]}
        human = f"the daemon is already running (pid {before['pid']})"
        if before.get("other_settings"):
            data["other_settings"] = True
            human += (
                ", but with other settings than this command's (a TSM_* variable or a"
                " tsm.toml value differs, e.g. TSM_STORE_URL), so it does not serve them;"
                " `tsm restart` runs it with these"
            )
        emit(args, data, human)
        return 0
    if not ensure_started(settings, START_WAIT):
        log = settings.state_dir / "logs"
        raise DaemonUnreachable("the daemon did not start", f"see the logs in {log}")
    after = daemon_state(settings)
    data = {"started": True, "running": True, "pid": after["pid"], "socket": after["socket"]}
    emit(args, data, f"started the daemon (pid {after['pid']}, socket {after['socket']})")
    return 0


def run_stop(args: argparse.Namespace) -> int:
    from ..client.lifecycle import stop

    result = stop(load_settings())
    if result["stopped"]:
        human = f"stopped the daemon (pid {result['pid']})"
    elif result["was"] == "stale":
        human = "the daemon was not running; removed its stale socket/pid file"
    else:
        human = "the daemon was not running"
    emit(args, result, human)
    return 0


def run_restart(args: argparse.Namespace) -> int:
    from ..client.lifecycle import daemon_state, ensure_started, stop

    settings = load_settings()
    stopped = stop(settings)
    if not ensure_started(settings, START_WAIT):
        raise DaemonUnreachable(
            "the daemon did not start again", f"see the logs in {settings.state_dir / 'logs'}"
        )
    after = daemon_state(settings)
    data = {
        "stopped": stopped["stopped"],
        "previous_pid": stopped["pid"],
        "started": True,
        "pid": after["pid"],
        "socket": after["socket"],
    }
    emit(args, data, f"restarted the daemon (pid {after['pid']})")
    return 0


def run_daemon(args: argparse.Namespace) -> int:
    from ..daemon.server import run

    return run(load_settings(), watch=not args.no_watch)
