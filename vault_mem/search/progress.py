"""Progress of long index work: a bar on a terminal's stderr, a line per 10% elsewhere.

Both show the rate and the time left. Build workers report every few files, so the bar
moves from the first seconds (see ``search/build.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from vault_mem.settings import Settings
from vault_mem.vault.portable import replace_file


class Progress:
    """Reports ``done`` of ``total`` items. ``quiet`` reports nothing (the server's own use)."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None, quiet: bool = False,
                 unit: str = "notes") -> None:
        self.label = label
        self.unit = unit
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.start = time.monotonic()
        self._tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_decile = -1
        self._last_draw = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.quiet or not self.total:
            return
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw > 0.1 or self.done >= self.total:
                self._last_draw = now
                self._draw(now)
        elif self.total >= 1000:
            decile = min(self.done, self.total) * 10 // self.total
            if decile != self._last_decile:
                self._last_decile = decile
                self.stream.write(f"{self.label}: {self._numbers(now)}\n")
                self.stream.flush()

    def _numbers(self, now: float) -> str:
        """``1,200/13,415 notes, 540/s, 23 s left`` (no rate before there is one)."""
        text = f"{self.done:,}/{self.total:,} {self.unit}"
        elapsed = now - self.start
        if self.done and elapsed > 0.5:
            rate = self.done / elapsed
            text += f", {rate:,.0f}/s"
            if self.done < self.total:
                text += f", {eta((self.total - self.done) / rate)} left"
        return text

    def _draw(self, now: float) -> None:
        width = 20
        filled = width * min(self.done, self.total) // self.total
        bar = "#" * filled + "." * (width - filled)
        # Padded so that a shorter line fully covers the one before it; one that wraps on a
        # narrow terminal could not be redrawn in place, so the bar goes first, then the label.
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        numbers = f"{self._numbers(now):<44}"
        line = f"{self.label} [{bar}] {numbers}"
        if len(line) > columns:
            line = f"{self.label}: {numbers}"[:columns]
        self.stream.write(f"\r{line}")
        self.stream.flush()

    def finish(self) -> float:
        elapsed = time.monotonic() - self.start
        if not self.quiet and self._tty and self.total:
            self.stream.write("\n")
            self.stream.flush()
        return elapsed


def eta(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class ProgressFile(Progress):
    """Progress also written as ``{"done", "total"}`` JSON to a file, for a parent process to read."""

    def __init__(self, label: str, total: int, path: Path, quiet: bool = True, *, config: Settings) -> None:
        super().__init__(label, total, quiet=quiet)
        self.config = config
        self.path = path
        self._last_write = 0.0
        self._write()

    def advance(self, n: int = 1) -> None:
        super().advance(n)
        now = time.monotonic()
        if now - self._last_write > 0.2 or self.done >= self.total:
            self._last_write = now
            self._write()

    def _write(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps({"done": self.done, "total": self.total}), encoding="utf-8")
            replace_file(tmp, self.path, config=self.config)
        except OSError:
            pass
