"""`tsm ingest-session` through a running daemon: anything but a Claude Code transcript is the
same one-line user error (exit 1) as in-process (tests/cli/test_sessions_cli.py), and the
index is left as it was."""

from __future__ import annotations

from claude_home import project_dir
from daemon_harness import Harness


def test_a_note_or_a_jsonl_without_transcript_lines_is_a_user_error(daemon: Harness) -> None:
    before = daemon.status()["total_documents"]
    junk = project_dir(daemon.root) / "junk.jsonl"
    junk.write_bytes(b"hello\nworld\n")
    for path, name, why in (
        ("notes/git-install.md", daemon.root / "notes" / "git-install.md", ""),
        (str(junk), junk, " (no transcript lines)"),
    ):
        result = daemon.cli("ingest-session", path, "-f", "json")
        assert result.code == 1 and result.out == "", (result.out, result.err)
        error = result.error()
        assert error["kind"] == "user_error" and "Traceback" not in result.err
        assert error["error"].startswith(f"{name} is not a Claude Code transcript{why}: ")
        assert "only Claude Code transcripts (.jsonl)" in error["error"]
    status = daemon.status()
    assert status["daemon"]["requests"] > 0  # answered by the daemon, not in-process
    assert status["total_documents"] == before
