"""Progress of long index work: a bar on a terminal's stderr, a line per 10% elsewhere."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from vault_mem.vault.portable import replace_file


class Progress:
    """Reports ``done`` of ``total`` items. ``quiet`` reports nothing (the server's own use)."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.label = label
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
            decile = self.done * 10 // self.total
            if decile != self._last_decile:
                self._last_decile = decile
                self.stream.write(f"{self.label}: {self.done}/{self.total} notes\n")
                self.stream.flush()

    def _draw(self, now: float) -> None:
        width = 30
        filled = width * self.done // self.total
        rate = self.done / max(now - self.start, 1e-6)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} notes, {rate:,.0f}/s ")
        self.stream.flush()

    def finish(self) -> float:
        elapsed = time.monotonic() - self.start
        if not self.quiet and self._tty and self.total:
            self.stream.write("\n")
            self.stream.flush()
        return elapsed


class ProgressFile(Progress):
    """Progress also written as ``{"done", "total"}`` JSON to a file, for a parent process to read."""

    def __init__(self, label: str, total: int, path: Path, quiet: bool = True) -> None:
        super().__init__(label, total, quiet=quiet)
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
            replace_file(tmp, self.path)
        except OSError:
            pass
