"""Make the plugin's hook modules and this directory's harness importable by the tests.

The hook scripts are plain files run by `python3`, not a package, so they are imported by
path, as the scripts themselves do.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "plugin" / "hooks"))
sys.path.insert(0, str(HERE))
