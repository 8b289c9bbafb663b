"""``serve --sync-every SECONDS``: run ``vault-mem sync`` (git/sync.py) in the background.

Each round's outcome is logged on stderr (never stdout: the protocol owns it). The watcher
sees whatever the sync changed in the files, and the history map follows HEAD, so the
index needs nothing more; conflicted copies show up in every answer's ``hints`` until a
person resolves them (reads/conflicts.py).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from vault_mem.errors import GitError
from vault_mem.git.history import history_for
from vault_mem.git.sync import SyncResult, sync_vault
from vault_mem.settings import Settings

log = logging.getLogger("vault_mem.sync")


class SyncLoop:
    """Syncs ``root`` every ``seconds`` until stopped; ``last`` is the latest result."""

    def __init__(self, root: Path, seconds: float, *, config: Settings) -> None:
        self.config = config
        self.root = root
        self.seconds = seconds
        self.last: SyncResult | None = None
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="vault-mem-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.config.sync_stop_wait)

    def run_once(self) -> SyncResult | None:
        try:
            # Write tools keep running meanwhile: commits move HEAD by compare-and-swap, and the
            # work tree moves only by fast-forward, which refuses to overwrite a changed file.
            result = sync_vault(self.root, config=self.config)
        except GitError as exc:
            log.warning("sync: %s", str(exc))
            return None
        except Exception:  # the server keeps serving whatever a sync round did
            log.exception("sync failed")
            return None
        self.last, self.rounds = result, self.rounds + 1
        for line in result.lines:
            (log.info if result.complete else log.warning)("sync: %s", line)
        history = history_for(self.root)
        if history is not None:
            history.refresh()
        return result

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            self.run_once()
