"""Holding a build or a merge process at a named step (``vault_mem/search/hold.py``), so that a
test interrupts or kills it at a known point instead of racing it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from vault_mem.search.hold import HOLD_AT  # re-exported: the tests above the engine hold it here
from vault_mem.search.whoosh.patches import ENVIRONMENT as WHOOSH_PATCHES

HANG = 120.0  # generous: only a hang fails


def held_environment(step: str, marker: Path) -> dict[str, str]:
    """This process's environment without any ``VAULT_MEM_`` setting but the run's choice of Whoosh
    patches, holding ``step`` at ``marker``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEM_") or k == WHOOSH_PATCHES}
    env[HOLD_AT] = f"{step}={marker}"
    return env


def wait_held(marker: Path, proc: subprocess.Popen[bytes] | subprocess.Popen[str] | None = None,
              running: Callable[[], bool] | None = None) -> None:
    """Until the process holding at ``marker`` is there; fails if it ended first (it never got there)."""
    deadline = time.monotonic() + HANG
    while not marker.exists():
        assert proc is None or proc.poll() is None, f"the process ended (code {proc.returncode}) before the step"
        assert running is None or running(), "it ended before the step"
        assert time.monotonic() < deadline, "the process never reached the step"
        time.sleep(0.01)
