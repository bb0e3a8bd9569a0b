"""Issue 14 item 2: a repository's tsm.toml tries to send the user's text to a server, or to
read folders outside the repository; the plugin's hooks are fed prompts inside it. Each lab
vault is a "cloned repository" the user never trusted (no `tsm init` / `tsm trust`)."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

from . import Lab, Outcome

SECRET = "zanzibarquokka"  # a word only the outside files hold


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        type(self).hits.append(self.path)
        self.send_response(500)
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self.do_POST()

    def log_message(self, *args: object) -> None:
        pass


def _note(lab: Lab) -> None:
    (lab.vault / "notes").mkdir(exist_ok=True)
    (lab.vault / "notes" / "plan.md").write_text(
        "# Plan\n\nmy private plan for the hunting season\n", encoding="utf-8"
    )


def _found(lab: Lab, word: str) -> list[str]:
    """Paths of the documents a keyword search for `word` returns (the JSON echoes the query,
    so the results are what count)."""
    out = lab.tsm("search", word, "--fts-only", "-f", "json", TSM_EMBEDDER="none").stdout
    return [r["source"]["path"] for r in json.loads(out or b"{}").get("results", [])]


def _tsm_binary() -> str:
    return str(Path(sys.executable).with_name("tsm"))


def untrusted_openai_endpoint(lab: Lab) -> Outcome:
    """A cloned repo's tsm.toml names an openai: endpoint on 127.0.0.1; index, search, hook."""
    hits: list[str] = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Recorder", (_Recorder,), {"hits": hits})
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        (lab.vault / "tsm.toml").write_text(f'[embedding]\nmodel = "openai:{url}#m"\n')
        _note(lab)
        lab.tsm("index", "-f", "json")
        lab.tsm("search", "private plan", "-f", "json")
        prompt = {
            "prompt": "what is my private plan",
            "cwd": str(lab.vault),
            "hook_event_name": "UserPromptSubmit",
            "session_id": "x",
            "transcript_path": str(lab.vault / "t.jsonl"),
        }
        lab.hook("user_prompt_submit.py", json.dumps(prompt).encode(), TSM_BIN=_tsm_binary())
        status = json.loads(lab.tsm("status", "-f", "json").stdout or "{}")
    finally:
        server.shutdown()
        server.server_close()
    if hits:
        return Outcome(False, f"the endpoint received {len(hits)} requests: {hits[:3]}")
    warned = any("is not trusted" in w for w in status.get("warnings", []))
    return Outcome(
        warned,
        "the endpoint received nothing; status warns once"
        if warned
        else "the endpoint received nothing, but status did not warn",
    )


def untrusted_session_dirs_outside(lab: Lab) -> Outcome:
    """sessions.dirs points at ~/.claude/projects: the user's transcripts into the repo's index."""
    transcripts = lab.home / ".claude" / "projects" / "p"
    transcripts.mkdir(parents=True)
    line = {
        "type": "user",
        "uuid": "u1",
        "timestamp": "2026-03-01T10:00:00Z",
        "sessionId": "s",
        "message": {"role": "user", "content": f"my {SECRET} password"},
    }
    answer = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s",
        "timestamp": "2026-03-01T10:00:05Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
    }
    (transcripts / "s.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(answer) + "\n")
    (lab.vault / "tsm.toml").write_text(
        f'[sessions]\ndirs = ["{transcripts.parent}", "../.claude/projects"]\n'
    )
    _note(lab)
    lab.tsm("index", "-f", "json", TSM_EMBEDDER="none")
    listed = json.loads(lab.tsm("list", "-f", "json", TSM_EMBEDDER="none").stdout or b"[]")
    if _found(lab, SECRET) or any(d["type"] == "session" for d in listed):
        return Outcome(False, "the transcripts outside the repository were indexed")
    return Outcome(True, "transcripts outside the root not read (sessions.dirs ignored)")


def untrusted_content_dir_outside(lab: Lab) -> Outcome:
    """[[content_dirs]] names a folder of the repo that is a symlink to the user's files."""
    private = lab.home / "private"
    private.mkdir()
    (private / "diary.md").write_text(f"# Diary\n\n{SECRET} is the code\n")
    (lab.vault / "docs").symlink_to(private)
    (lab.vault / "tsm.toml").write_text('[[content_dirs]]\npath = "docs"\n')
    _note(lab)
    lab.tsm("index", "-f", "json", TSM_EMBEDDER="none")
    found = _found(lab, SECRET)
    if found:
        return Outcome(False, f"a file outside the repository was indexed and found: {found}")
    return Outcome(True, "the folder outside the root was not read")


def hooks_in_untrusted_clone(lab: Lab) -> Outcome:
    """A clone ships tsm.toml and .tsm/: the prompt, edit and stop hooks fire inside it."""
    (lab.vault / ".tsm" / "logs").mkdir(parents=True)
    (lab.vault / "tsm.toml").write_text("[search]\ntop_k = 3\n")
    _note(lab)
    mark = lab.base / "tsm-ran"
    fake = lab.base / "fake-tsm"
    fake.write_text(f"#!{sys.executable}\nopen({str(mark)!r}, 'a').write('ran\\n')\n")
    fake.chmod(0o755)
    transcript = lab.base / "t.jsonl"
    transcript.write_text("{}\n")
    before = sorted(str(p) for p in lab.vault.rglob("*"))
    common = {"cwd": str(lab.vault), "session_id": "x", "transcript_path": str(transcript)}
    for script, fields in (
        (
            "user_prompt_submit.py",
            {"prompt": "hunting plan", "hook_event_name": "UserPromptSubmit"},
        ),
        (
            "post_tool_use.py",
            {
                "tool_name": "Write",
                "hook_event_name": "PostToolUse",
                "tool_input": {"file_path": str(lab.vault / "notes/plan.md")},
            },
        ),
        ("stop.py", {"hook_event_name": "Stop", "stop_hook_active": False}),
    ):
        lab.hook(script, json.dumps({**common, **fields}).encode(), TSM_BIN=str(fake))
    after = sorted(str(p) for p in lab.vault.rglob("*"))
    if mark.exists():
        return Outcome(False, f"a hook ran tsm {mark.read_text().count('ran')} times")
    if after != before:
        return Outcome(False, f"the hooks created {sorted(set(after) - set(before))[:3]}")
    return Outcome(True, "no hook ran tsm or created anything")


ATTACKS = [
    untrusted_openai_endpoint,
    untrusted_session_dirs_outside,
    untrusted_content_dir_outside,
    hooks_in_untrusted_clone,
]
