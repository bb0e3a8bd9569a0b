"""Human output never lets a name a repository chose forge a line: a path with a newline in
a warning of `tsm index` or a message of `tsm doctor` is shown on its own line, escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORGED = "warning: FORGED"


def test_a_transcript_name_cannot_forge_an_index_warning(tmp_path: Path, tsm: Any) -> None:
    root = tmp_path / "clone"
    sessions = root / "sess"
    sessions.mkdir(parents=True)
    (root / "tsm.toml").write_text('[sessions]\ndirs = ["sess"]\n')
    prompt = {
        "type": "user",
        "uuid": "1",
        "timestamp": "2024-01-01T00:00:00Z",
        "message": {"role": "user", "content": "how do I configure the frobnicator"},
    }
    # one malformed line makes index warn with the transcript's path
    (sessions / f"x\n{FORGED}.jsonl").write_text(json.dumps(prompt) + "\nnot json\n")
    result = tsm("index", "--no-embed", "-f", "human", cwd=root, timeout=120)
    assert result.code == 0, result.err
    assert not any(line.startswith(FORGED) for line in result.out.splitlines()), result.out
    assert "sess/x\\x0awarning: FORGED.jsonl: skipped 1 malformed lines" in result.out


def test_a_root_name_cannot_forge_a_doctor_line(tmp_path: Path, tsm: Any) -> None:
    root = tmp_path / "x\nok    FORGED"  # a folder name the user's clone was given
    root.mkdir()
    (root / "a.md").write_text("# A\n\nwords\n")
    (root / "tsm.toml").write_text("")
    assert tsm("index", "--no-embed", "-f", "json", cwd=root, timeout=120).code == 0
    result = tsm("doctor", "-f", "human", cwd=root, timeout=120)
    assert not any(line.startswith("ok    FORGED") for line in result.out.splitlines())
    assert "x\\x0aok    FORGED" in result.out, result.out
