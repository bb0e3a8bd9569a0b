"""Whether the daemon's settings still hold: a client's fingerprint against the daemon's, and
tsm.toml on disk against what the daemon started with. A daemon whose settings went stale
steps aside, so that the next command starts one with the new settings."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from ..client.fingerprint import settings_fingerprint
from ..config import Settings, load
from ..errors import TsmError

log = logging.getLogger("tsm.daemon")


class SettingsGuard:
    """`shutdown` stops the daemon; `stopping` is set once it is stopping."""

    def __init__(
        self, settings: Settings, shutdown: Callable[[], None], stopping: threading.Event
    ) -> None:
        self.settings = settings
        self.fingerprint = settings_fingerprint(settings)
        self._shutdown = shutdown
        self._stopping = stopping

    def same(self, fingerprint: object) -> bool:
        """Whether a client would search with this daemon's settings. If not, and tsm.toml
        changed since we started, step aside so that the next command starts a daemon with
        the new settings; a client whose own environment differs (say TSM_TOP_K=3) just
        searches in-process."""
        if fingerprint == self.fingerprint:
            return True
        try:
            current = settings_fingerprint(load(self.settings.index_root, os.environ))
        except TsmError:
            current = None  # a broken tsm.toml: keep serving with the settings we have
        if current is not None and current != self.fingerprint:
            self._step_aside()
        return False

    def still_current(self) -> bool:
        """Whether tsm.toml and the folders it names still give this daemon's settings, for
        work no client asked for (the watcher). Settings are checked when they are loaded: a
        content dir or sessions folder of an untrusted root that became a link out of the
        root since (a `git pull`, a checkout) was walked and read from there by the daemon
        of the settings it started with. When they differ, or tsm.toml is now broken, the
        work is not done, and on a change the daemon steps aside as for a client's."""
        try:
            current = settings_fingerprint(load(self.settings.index_root, os.environ))
        except TsmError as exc:
            log.warning("watcher: not indexing, the configuration is broken: %s", exc.message)
            return False
        if current == self.fingerprint:
            return True
        self._step_aside()
        return False

    def _step_aside(self) -> None:
        if not self._stopping.is_set():
            log.info("configuration changed on disk; exiting so a fresh daemon picks it up")
            threading.Timer(0.05, self._shutdown).start()
