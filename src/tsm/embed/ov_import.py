"""`import openvino` without OpenVINO's telemetry.

Importing openvino imports its model converter (`openvino.tools.ovc`), whose import sends
a usage event to Google Analytics through the `openvino_telemetry` package: consent is
assumed when no consent file exists, a client id is written to `~/intel/`, and the event
goes out from a thread pool that forks a process. tsm promises no network at run time and
no writes outside its state dir; and the fork, taken while the embedding worker's main
thread holds its stdin, leaves a child stuck on that lock (a ~37 MB process per worker
start, never reaped). Hidden from the import system, the package is replaced by OpenVINO's
own stub (`openvino.tools.ovc.telemetry_stub`), which sends nothing.
"""

from __future__ import annotations

import sys
from typing import Any

TELEMETRY = "openvino_telemetry"


def openvino() -> Any:
    """The `openvino` module, imported (the first time) with its telemetry left out."""
    if "openvino" not in sys.modules and TELEMETRY not in sys.modules:
        sys.modules[TELEMETRY] = None  # type: ignore[assignment]  # `import` raises ImportError
    import openvino as ov

    return ov
