"""core/doctor.py's DoctorReport: built from real checks of a real temp index, its JSON is the
README's (`sections[].items[]` of name, status, message, fix; `issue_count`, `error_count`),
and `from_json` (what RemoteKnowledge reads off the daemon's socket) gives it back whole."""

from __future__ import annotations

import json
from pathlib import Path

from tsm.config import load
from tsm.core.doctor import Check, DoctorReport, diagnose
from tsm.embed.fake import FakeEmbedder
from tsm.indexing import index_paths
from tsm.store.connect import open_db


def test_a_report_with_warnings_and_an_error_survives_the_wire(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "note.md").write_text("# A note\n\nSome text.\n", encoding="utf-8")
    settings = load(
        root,
        {"TSM_INDEX_ROOT": str(root), "TSM_EMBEDDER": "fake", "TSM_NO_USER_CONFIG": "1"},
    )
    conn = open_db(settings.db_path, create=True)
    index_paths(settings, conn, embedder=FakeEmbedder())
    conn.close()
    Path(f"{settings.db_path}.rebuild").write_bytes(b"left by a killed rebuild")
    embedder = {"workers": [{"role": "query", "state": "crashed", "pid": 1, "detail": "SIGKILL"}]}

    report = diagnose(settings, {"state": "stale", "pid": 999999}, embedder)

    checks = {(s.name, c.name): c for s in report.sections for c in s.checks}
    assert checks["database", "integrity"] == Check("integrity", "ok", "PRAGMA quick_check: ok")
    assert checks["database", "interrupted rebuild"].status == "warn"
    assert checks["daemon", "process"].status == "warn"
    assert checks["embedder", "query worker"].status == "error"
    assert (report.issue_count, report.error_count) == (3, 1)

    data = report.as_json()
    assert list(data) == ["sections", "issue_count", "error_count"]
    assert [s["name"] for s in data["sections"]] == [
        "database", "daemon", "embedder", "vectors", "paths", "trust",
    ]  # fmt: skip
    for section in data["sections"]:
        assert list(section) == ["name", "items"]
        for item in section["items"]:
            assert list(item) == ["name", "status", "message", "fix"]
    assert (data["issue_count"], data["error_count"]) == (3, 1)
    wire = json.loads(json.dumps(data))
    assert DoctorReport.from_json(wire) == report
