"""A fingerprint of the Settings: a client and a daemon compare it to know they would search
the same index the same way. Light on purpose (no numpy, no tokenizer)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings


def settings_fingerprint(settings: Settings) -> str:
    """Equal for a client and a daemon that would search the same index the same way. A client
    whose environment or tsm.toml differs from the daemon's searches in-process instead."""
    data = {
        "root": str(settings.index_root),
        "state": str(settings.state_dir),
        "db": str(settings.db_path),
        # daemon.* settings steer the client (auto-start), not how the daemon searches
        "values": {k: v for k, v in settings.values.items() if not k.startswith("daemon.")},
        "content_dirs": [asdict(d) for d in settings.content_dirs],
        "session_dirs": [str(p) for p in settings.session_dirs],
        "status_weights": dict(settings.status_weights),
        "ignored": list(settings.ignored),  # the untrusted tsm.toml warning
    }
    blob = json.dumps(data, sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()
