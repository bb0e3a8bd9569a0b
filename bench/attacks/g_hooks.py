"""Issue 30 items 2 and 11: the plugin's hooks run a repository's `tsm`, and the Stop hook
ingests any file it is handed. The lab vault is trusted; a repository is cloned inside it
and the session runs there, as Claude Code runs hooks in the session's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from . import HOOKS, Lab, Outcome

BARE_PATH = os.pathsep.join(["/usr/bin", "/bin"])
PLANTED = "#!/bin/sh\necho \"$0 $*\" >> {mark}\necho 'tsm 0.0.1'\n"
NO_VECTORS = {"TSM_EMBEDDER": "none"}


def _repo(lab: Lab) -> Path:
    """vault/repo with a planted `tsm` at its top and in node_modules/.bin; vault trusted."""
    repo = lab.vault / "repo"
    (repo / "node_modules" / ".bin").mkdir(parents=True)
    (lab.vault / "tsm.toml").write_text("", encoding="utf-8")  # the index root, above repo
    (repo / "README.md").write_text("# Repo\n\nbuild with make\n", encoding="utf-8")
    for folder in (repo, repo / "node_modules" / ".bin"):
        program = folder / "tsm"
        program.write_text(PLANTED.format(mark=lab.base / "mark"), encoding="utf-8")
        program.chmod(0o755)
    lab.tsm("trust", str(lab.vault), timeout=300)  # also records the real tsm for the hooks
    return repo


def _hook(lab: Lab, script: str, cwd: Path, fields: dict, **env: str) -> bytes:
    payload = {
        "session_id": "x",
        "transcript_path": str(cwd / "t.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": script,
        **fields,
    }
    done = subprocess.run(
        [sys.executable, str(HOOKS / f"{script}.py")],
        input=json.dumps(payload).encode(),
        env=lab.environ(TSM_HOOK_TIMEOUT="60", **NO_VECTORS, **env),
        capture_output=True,
        timeout=300,
        cwd=cwd,
    )
    return done.stdout


HOOK_FIELDS = {
    "session_start": {"source": "startup"},
    "user_prompt_submit": {"prompt": "how is this repository built?"},
    "post_tool_use": {"tool_name": "Write", "tool_input": {"file_path": "README.md"}},
}


def _ran(lab: Lab) -> str:
    mark = lab.base / "mark"
    return mark.read_text(encoding="utf-8").strip() if mark.exists() else ""


def repository_tsm_on_path(lab: Lab) -> Outcome:
    """PATH holds `` (a trailing colon), `.`, `node_modules/.bin`, then the repository's
    node_modules/.bin as an absolute entry (direnv): each hook, each PATH."""
    repo = _repo(lab)
    for entry in ("", ".", "node_modules/.bin", str(repo / "node_modules" / ".bin")):
        for script, fields in HOOK_FIELDS.items():
            _hook(lab, script, repo, fields, PATH=os.pathsep.join([entry, BARE_PATH]))
            if _ran(lab):
                return Outcome(False, f"{script} with PATH entry {entry!r} ran: {_ran(lab)}")
    listed = lab.tsm("list", "-f", "json", timeout=300, **NO_VECTORS).stdout
    if "repo/README.md" not in listed.decode():
        return Outcome(False, "the real tsm did not run either: the attack did not reach it")
    return Outcome(True, "passed over in 4 PATH shapes x 3 hooks; the recorded tsm ran")


def relative_tsm_bin(lab: Lab) -> Outcome:
    """TSM_BIN=tsm (or the plugin option) with `.` on PATH: looked up in the repository."""
    repo = _repo(lab)
    for variable in ("TSM_BIN", "CLAUDE_PLUGIN_OPTION_TSM_BIN"):
        out = _hook(
            lab,
            "session_start",
            repo,
            HOOK_FIELDS["session_start"],
            PATH=os.pathsep.join([".", BARE_PATH]),
            **{variable: "tsm"},
        )
        if _ran(lab):
            return Outcome(False, f"{variable}=tsm ran the repository's: {_ran(lab)}")
        if b"not an absolute path" not in out:
            return Outcome(False, f"{variable}=tsm was not named: {out[:200]!r}")
    return Outcome(True, "refused and named in the session's message")


def repository_python3_runs_the_hooks(lab: Lab) -> Outcome:
    """hooks.json's own commands run through a shell in the repository, which holds a
    `python3` at its top and in node_modules/.bin, with each relative PATH entry."""
    repo = _repo(lab)
    for folder in (repo, repo / "node_modules" / ".bin"):
        program = folder / "python3"
        program.write_text(PLANTED.format(mark=lab.base / "mark"), encoding="utf-8")
        program.chmod(0o755)
    hooks = json.loads((HOOKS / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    payload = {"session_id": "x", "cwd": str(repo), "prompt": "ok", "source": "startup"}
    for entry in ("", ".", "node_modules/.bin"):
        for event, groups in hooks.items():
            subprocess.run(
                groups[0]["hooks"][0]["command"],
                shell=True,
                input=json.dumps({**payload, "hook_event_name": event}).encode(),
                env=lab.environ(
                    CLAUDE_PLUGIN_ROOT=str(HOOKS.parent),
                    PATH=os.pathsep.join([entry, BARE_PATH]),
                    **NO_VECTORS,
                ),
                capture_output=True,
                timeout=300,
                cwd=repo,
            )
            if _ran(lab):
                return Outcome(False, f"{event} with PATH entry {entry!r} ran: {_ran(lab)}")
    return Outcome(True, "3 PATH shapes x 4 hooks: the repository's python3 never ran")


CANARY = "ZQCANARY"  # a word only the other project's transcript holds


def _transcript_line(role: str, uuid: str, text: str) -> str:
    message = {"role": role, "content": text}
    return json.dumps({"type": role, "uuid": uuid, "message": message})


def foreign_transcript_through_stop(lab: Lab) -> Outcome:
    """The Stop hook handed another project's transcript (another folder under
    ~/.claude/projects), a link to it in this project's folder, a file in /tmp."""
    (lab.vault / "tsm.toml").write_text("", encoding="utf-8")
    lab.tsm("trust", str(lab.vault), timeout=300)
    other = lab.home / ".claude" / "projects" / "-home-someone-other-project"
    other.mkdir(parents=True)
    secret = other / "s.jsonl"
    secret.write_text(
        _transcript_line("user", "u1", f"the {CANARY} launch codes are in the safe")
        + "\n"
        + _transcript_line("assistant", "a1", f"Noted: {CANARY} is in the safe.")
        + "\n",
        encoding="utf-8",
    )
    link = lab.claude_project / "link.jsonl"
    link.symlink_to(secret)
    loose = lab.base / "loose.jsonl"
    loose.write_bytes(secret.read_bytes())
    own = lab.claude_project / "own.jsonl"
    own.write_text(
        _transcript_line("user", "u2", "how do I renew the hunting licence?") + "\n",
        encoding="utf-8",
    )
    for path in (secret, link, loose, own):
        _hook(lab, "stop", lab.vault, {"transcript_path": str(path)})
    # a fresh $HOME builds its caches on the first search: generous bounds on a busy machine
    found = lab.tsm("search", CANARY, "--fts-only", "-f", "json", timeout=300, **NO_VECTORS).stdout
    listed = lab.tsm("list", "--type", "session", "-f", "json", timeout=300, **NO_VECTORS).stdout
    names = sorted(Path(d["path"]).name for d in json.loads(listed or b"[]"))
    results = json.loads(found or b"{}").get("results", [])  # the JSON echoes the query
    if results:
        return Outcome(False, f"another project's words are searchable; sessions: {names}")
    if names != ["own.jsonl"]:
        return Outcome(False, f"sessions after the Stop hooks: {names}")
    return Outcome(True, "only this project's own transcript was ingested")


ATTACKS = [
    repository_tsm_on_path,
    relative_tsm_bin,
    repository_python3_runs_the_hooks,
    foreign_transcript_through_stop,
]
