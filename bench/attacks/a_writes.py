"""Issue 14 items 1, 12, 14, 16: where tsm writes. A repository ships a `.tsm/` full of links
(hook log, logs dir, state dir, DB, WAL, lock, daemon logs), a config value or file name that
is shell code or a terminal escape, files named like options; another local user listens on
the socket. The lab's `home` is $HOME: its .bashrc must never change.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

from . import Lab, Outcome

BASHRC = "# the user's own .bashrc\n"
HOSTILE_TOP_K = '[search]\ntop_k = "\\"\'; touch ~/pwned; #"\n'


def _tsm_binary() -> str:
    return str(Path(sys.executable).with_name("tsm"))


def _setup(lab: Lab) -> Path:
    """~/.bashrc, and a vault holding one note; returns the .bashrc."""
    bashrc = lab.home / ".bashrc"
    bashrc.write_text(BASHRC)
    (lab.vault / "note.md").write_text("# Note\n\nLoRa radio settings.\n")
    return bashrc


def _prompt(lab: Lab) -> bytes:
    return json.dumps(
        {
            "prompt": "what are the LoRa radio settings?",
            "cwd": str(lab.vault),
            "hook_event_name": "UserPromptSubmit",
            "session_id": "x",
            "transcript_path": str(lab.vault / "t.jsonl"),
        }
    ).encode()


def _home_intact(lab: Lab, bashrc: Path) -> Outcome | None:
    """None when ~/.bashrc is as it was and `bash -i` creates no ~/pwned, else the failure."""
    if shutil.which("bash"):
        subprocess.run(
            ["bash", "-i", "-c", "true"],
            env={"HOME": str(lab.home), "PATH": os.defpath},
            cwd=lab.home,
            capture_output=True,
            timeout=30,
        )
    if (lab.home / "pwned").exists():
        return Outcome(False, "bash -i ran the repository's code: ~/pwned exists")
    if bashrc.read_text() != BASHRC:
        return Outcome(False, f"~/.bashrc changed: {bashrc.read_text()[-120:]!r}")
    return None


def bashrc_via_hook_log(lab: Lab) -> Outcome:
    """Issue's repro: .tsm/logs/hooks.log -> ~/.bashrc, a top_k of shell code; hook fires."""
    bashrc = _setup(lab)
    (lab.vault / "tsm.toml").write_text(HOSTILE_TOP_K)
    (lab.vault / ".tsm" / "logs").mkdir(parents=True)
    (lab.vault / ".tsm" / "logs" / "hooks.log").symlink_to(bashrc)
    lab.hook("user_prompt_submit.py", _prompt(lab), TSM_BIN=_tsm_binary())
    return _home_intact(lab, bashrc) or Outcome(True, "~/.bashrc unchanged, no ~/pwned")


def bashrc_via_hook_log_trusted(lab: Lab) -> Outcome:
    """The same in a root the user trusts (their TSM_INDEX_ROOT), so the hook does log."""
    bashrc = _setup(lab)
    (lab.vault / "tsm.toml").write_text(HOSTILE_TOP_K)
    (lab.vault / ".tsm" / "logs").mkdir(parents=True)
    (lab.vault / ".tsm" / "logs" / "hooks.log").symlink_to(bashrc)
    done = lab.hook(
        "user_prompt_submit.py", _prompt(lab), TSM_BIN=_tsm_binary(), TSM_INDEX_ROOT=str(lab.vault)
    )
    return _home_intact(lab, bashrc) or Outcome(
        True, "link refused; the line went to stderr" if done.stderr else "link refused"
    )


def _planted(lab: Lab, bashrc: Path, *links: tuple[str, Path], run: str) -> Outcome:
    """Plant `links` (path under the vault → target) and run `run` (index | daemon | start)."""
    for rel, target in links:
        path = lab.vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)
    env = {"TSM_EMBEDDER": "none", "TSM_INDEX_ROOT": str(lab.vault)}
    if run == "daemon":
        done = lab.tsm("daemon", "--no-watch", timeout=60, **env)
    else:
        done = lab.tsm(run, "-f", "json", timeout=120, **env)
        lab.tsm("stop", "-f", "json", **env)
    return _home_intact(lab, bashrc) or Outcome(
        b"Traceback" not in done.stderr and done.returncode != 0,
        f"exit {done.returncode}: {done.stderr.decode(errors='replace').strip()[:110]}",
    )


def state_dir_link(lab: Lab) -> Outcome:
    """.tsm -> ~ : the DB, WAL and logs would land in $HOME."""
    bashrc = _setup(lab)
    out = _planted(lab, bashrc, (".tsm", lab.home), run="index")
    leaked = [p.name for p in lab.home.iterdir() if p.name.startswith("tsm")]
    return Outcome(False, f"wrote {leaked} into $HOME") if leaked else out


def db_and_wal_links(lab: Lab) -> Outcome:
    """.tsm/tsm.db-wal -> ~/.bashrc and tsm.db -> ~/new.db: SQLite follows both."""
    bashrc = _setup(lab)
    out = _planted(
        lab, bashrc, (".tsm/tsm.db", lab.home / "new.db"), (".tsm/tsm.db-wal", bashrc), run="index"
    )
    return Outcome(False, "SQLite created ~/new.db") if (lab.home / "new.db").exists() else out


def daemon_log_and_lock_links(lab: Lab) -> Outcome:
    """.tsm/logs/tsmd.log -> ~/.bashrc and tsmd.lock -> ~/lock: `tsm daemon` starts."""
    bashrc = _setup(lab)
    out = _planted(
        lab,
        bashrc,
        (".tsm/logs/tsmd.log", bashrc),
        (".tsm/tsmd.lock", lab.home / "lock"),
        run="daemon",
    )
    return Outcome(False, "created ~/lock") if (lab.home / "lock").exists() else out


def spawn_log_link(lab: Lab) -> Outcome:
    """.tsm/logs/tsmd.stderr.log -> ~/.bashrc: `tsm start` spawns the daemon into it."""
    bashrc = _setup(lab)
    return _planted(lab, bashrc, (".tsm/logs/tsmd.stderr.log", bashrc), run="start")


def hook_log_fifo(lab: Lab) -> Outcome:
    """.tsm/logs/hooks.log is a FIFO: opening it for append would block the hook forever."""
    _setup(lab)
    (lab.vault / ".tsm" / "logs").mkdir(parents=True)
    os.mkfifo(lab.vault / ".tsm" / "logs" / "hooks.log")
    lab.hook(
        "user_prompt_submit.py",
        _prompt(lab),
        timeout=30,
        TSM_BIN="/nonexistent/tsm",
        TSM_INDEX_ROOT=str(lab.vault),
    )  # a hang raises TimeoutExpired: "hung"
    return Outcome(True, "the hook returned at once")


def control_characters_in_logs(lab: Lab) -> Outcome:
    """An index root named with a newline and an OSC escape: daemon log and hook log."""
    bashrc = _setup(lab)
    hostile = lab.home / "v\nFORGED ERROR line\x1b]0;owned\x07"
    lab.vault.rename(hostile)
    env = {"TSM_EMBEDDER": "none", "TSM_INDEX_ROOT": str(hostile)}
    lab.tsm("index", "-f", "json", cwd=hostile, **env)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "tsm", "daemon", "--no-watch"],
        cwd=hostile,
        env=lab.environ(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        log = hostile / ".tsm" / "logs" / "tsmd.log"
        for _ in range(100):
            if log.exists() and b"listening" in log.read_bytes():
                break
            subprocess.run(["sleep", "0.1"])
    finally:
        daemon.terminate()
        daemon.wait(15)
    prompt = json.dumps({"prompt": "LoRa radio settings", "cwd": str(hostile)}).encode()
    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[2] / "plugin" / "hooks" / "user_prompt_submit.py"),
        ],
        input=prompt,
        cwd=hostile,
        env=lab.environ(TSM_BIN="/nonexistent/tsm\n\x1b[31m", **env),
        capture_output=True,
        timeout=30,
    )
    bad = []
    for path in (log, hostile / ".tsm" / "logs" / "hooks.log"):
        raw = path.read_bytes() if path.exists() else b""
        if not raw:
            bad.append(f"{path.name} empty")
        elif b"\x1b" in raw or b"\x07" in raw or b"\nFORGED" in raw:
            bad.append(f"{path.name} holds a raw control character")
    return _home_intact(lab, bashrc) or Outcome(
        not bad, "; ".join(bad) or "both logs escape them on one line"
    )


def modes_of_everything(lab: Lab) -> Outcome:
    """An older tsm's 0755/0644 state; index, daemon, hook: is anything left open to others?"""
    _setup(lab)
    env = {"TSM_EMBEDDER": "none", "TSM_INDEX_ROOT": str(lab.vault)}
    lab.tsm("index", "-f", "json", **env)
    state = lab.vault / ".tsm"
    state.chmod(0o755)
    (state / "tsm.db").chmod(0o644)
    lab.tsm("start", "-f", "json", timeout=120, **env)
    lab.tsm("search", "LoRa", "--fts-only", "-f", "json", **env)
    lab.hook("user_prompt_submit.py", _prompt(lab), TSM_BIN="/nonexistent/tsm", **env)
    found = {
        str(p.relative_to(state)): stat.S_IMODE(os.lstat(p).st_mode)
        for p in [state, *state.rglob("*")]
    }
    lab.tsm("stop", "-f", "json", **env)
    open_ = {name: f"{m:o}" for name, m in found.items() if m & 0o077}
    return Outcome(
        not open_,
        f"open to others: {open_}" if open_ else f"{len(found)} paths, dirs 700 and files 600",
    )


def foreign_daemon(lab: Lab) -> Outcome:
    """Another uid listens on tsmd.sock (shared state dir): does a search send it the query?"""
    if os.getuid() != 0:
        return Outcome(True, "skipped: needs root to act as another uid")
    _setup(lab)
    env = {"TSM_EMBEDDER": "none", "TSM_INDEX_ROOT": str(lab.vault)}
    lab.tsm("index", "-f", "json", **env)
    path = lab.vault / ".tsm" / "tsmd.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    received = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, socket, sys\n"
            "s = socket.socket(fileno=3); os.setuid(65534); s.listen(4); s.settimeout(20)\n"
            "c, _ = s.accept(); c.settimeout(3)\n"
            "try: print(len(c.recv(65536)))\nexcept OSError: print(0)\n",
        ],
        pass_fds=(listener.fileno(),),
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.dup2(listener.fileno(), 3),
    )
    listener.close()
    try:
        subprocess.run(["sleep", "0.5"])
        done = lab.tsm("search", "LoRa", "--fts-only", "-f", "json", **env)
    finally:
        received.kill()
        out, _ = received.communicate(timeout=10)
    sent = int(out.strip() or 0)
    if sent:
        return Outcome(False, f"the other user's process received {sent} bytes")
    ok = done.returncode == 0 and b"note.md" in done.stdout
    return Outcome(
        ok,
        "it received nothing; search ran in-process"
        if ok
        else f"received nothing, but search failed: {done.stderr[-100:]!r}",
    )


def option_named_files(lab: Lab) -> Outcome:
    """Claude edits `-h.md` and `--apply.md`; PostToolUse re-indexes them: files or options?"""
    _setup(lab)
    env = {"TSM_EMBEDDER": "none", "TSM_INDEX_ROOT": str(lab.vault)}
    names = ("-h.md", "--apply.md")
    for name in names:
        (lab.vault / name).write_text("# Dashing\n\nxylophone tuning\n")
        payload = {
            "cwd": str(lab.vault),
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": str(lab.vault / name)},
        }
        lab.hook("post_tool_use.py", json.dumps(payload).encode(), TSM_BIN=_tsm_binary(), **env)
    listed = json.loads(lab.tsm("list", "-f", "json", **env).stdout or b"[]")
    missing = [n for n in names if n not in {d["path"] for d in listed}]
    return Outcome(not missing, f"not indexed: {missing}" if missing else "both indexed")


ATTACKS = [
    bashrc_via_hook_log,
    bashrc_via_hook_log_trusted,
    state_dir_link,
    db_and_wal_links,
    daemon_log_and_lock_links,
    spawn_log_link,
    hook_log_fifo,
    control_characters_in_logs,
    modes_of_everything,
    foreign_daemon,
    option_named_files,
]
