"""Who is working on an index right now: a small JSON file per live server or build.

``<index>/presence/<kind>-<pid>.json`` is written when a ``vault-mem serve`` or a build starts
and removed when it ends; a file whose process is gone (killed, crashed) is ignored and
cleaned up by the next reader. ``vault-mem status`` reads them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PRESENCE_DIR = "presence"  # kept when a build empties the index folder


def _file(index_dir: Path, kind: str, pid: int) -> Path:
    return index_dir / PRESENCE_DIR / f"{kind}-{pid}.json"


@contextlib.contextmanager
def present(index_dir: Path, kind: str, **info: Any) -> Iterator[None]:
    """Mark this process as a ``kind`` ("serve", "build") of the index while the block runs."""
    path = _file(index_dir, kind, os.getpid())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, {"pid": os.getpid(), "started": time.time(), **info})
    except OSError:  # a marker that cannot be written only makes ``status`` less precise
        pass
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


def note_present(index_dir: Path, kind: str, **info: Any) -> None:
    """Add ``info`` to this process's marker of ``kind`` (a value None takes its key away), when it
    has one: what ``status`` should say of it now, such as a watch the system refused."""
    path = _file(index_dir, kind, os.getpid())
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        known.update(info)
        _write(path, {k: v for k, v in known.items() if v is not None})
    except (OSError, ValueError, AttributeError):  # no marker (not a server), or not ours to mend
        pass


def _write(path: Path, info: dict[str, Any]) -> None:
    """``path`` holding ``info``, whole when a reader sees it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(info), encoding="utf-8")
    os.replace(tmp, path)


def live(index_dir: Path, kind: str) -> list[dict[str, Any]]:
    """The markers of ``kind`` whose process still runs, oldest first."""
    found = []
    with contextlib.suppress(OSError):
        for path in (index_dir / PRESENCE_DIR).glob(f"{kind}-*.json"):
            try:
                info = json.loads(path.read_text(encoding="utf-8"))
                pid = int(info["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if process_alive(pid):
                found.append(info)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
    return sorted(found, key=lambda info: float(info.get("started", 0)))


def process_alive(pid: int) -> bool:
    """True when a process with this id runs (on Windows without sending it anything)."""
    if pid == os.getpid():
        return True
    if sys.platform == "win32":
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        ctypes.windll.kernel32.CloseHandle(handle)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
