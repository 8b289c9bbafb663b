"""What each agent has seen, beside the index (docs/sharing.md, "Handoffs and the inbox").

``<index>/agents/<name>-<hash>.json`` per agent (names compared case-insensitively):

- ``read``: the uids of notes addressed to it that it has read with memory_read, with when;
- ``wrote``: the notes it wrote (path -> uid), to tell it when someone else deleted or moved
  one away (``lost``);
- ``errors``: its writes that did not fully land (``persist_error``), until its next call.

Never written into a note (reading never modifies a user's file), kept when the index is
rebuilt (``store.KEPT_ON_REBUILD``), so it survives restarts. Each change is a
read-modify-write under a file lock, replacing the file whole, so two servers on one vault
keep each other's changes; a reader needs no lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from vault_mem.index import filelocks
from vault_mem.vault.portable import replace_file

AGENTS_DIR = "agents"
MAX_READ = 5_000  # uids remembered as read; the oldest are forgotten first
MAX_WROTE = 2_000  # notes watched for ``lost``
MAX_ERRORS = 20
_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}  # state file -> (its stat, its state)
_cache_lock = threading.Lock()
T = TypeVar("T")


def agent_key(name: str) -> str:
    return name.strip().lower()


def state_file(index_dir: Path, agent: str) -> Path:
    key = agent_key(agent)
    stem = _UNSAFE.sub("_", key)[:40] or "agent"
    return index_dir / AGENTS_DIR / f"{stem}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}.json"


def empty() -> dict[str, Any]:
    return {"read": {}, "wrote": {}, "errors": []}


def load(index_dir: Path, agent: str) -> dict[str, Any]:
    """The agent's state (an empty one when it has none or the file is damaged), shared with
    other callers while the file is unchanged: read it, never change it (``change`` does)."""
    path = state_file(index_dir, agent)
    key = _stat_key(path)
    if key is None:
        return empty()
    with _cache_lock:
        cached = _cache.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    state = _read(path)
    with _cache_lock:
        _cache[str(path)] = (key, state)
    return state


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty()
    state = empty()
    if isinstance(data, dict):
        for key, kind in (("read", dict), ("wrote", dict), ("errors", list)):
            if isinstance(data.get(key), kind):
                state[key] = data[key]
    return state


def change(index_dir: Path, agent: str, edit: Callable[[dict[str, Any]], T]) -> T:
    """Apply ``edit`` to the agent's state under the lock and save it when it changed; returns
    what ``edit`` returned. ``edit`` gets a copy of each of the three containers and may add,
    remove or replace their items, never change an item in place. Raises OSError when the state
    folder cannot be written."""
    path = state_file(index_dir, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    with filelocks.held(path.parent / ".lock"):
        # Under the lock nobody else writes the file: the state this process read or wrote last
        # is the file's while its stat is the same (no parse of a thousand notes per save).
        before = load(index_dir, agent)
        state = _copy(before)
        result = edit(state)
        _bound(state)
        if state != before:
            state["agent"] = agent
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8", errors="surrogateescape")
            try:
                replace_file(tmp, path)
            finally:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            _remember(path, state)
    return result


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    copied = {"read": dict(state["read"]), "wrote": dict(state["wrote"]), "errors": list(state["errors"])}
    if "agent" in state:
        copied["agent"] = state["agent"]
    return copied


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    """What tells one version of a state file from the next (None: no file)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _remember(path: Path, state: dict[str, Any]) -> None:
    key = _stat_key(path)
    if key is not None:
        with _cache_lock:
            _cache[str(path)] = (key, state)


def _bound(state: dict[str, Any]) -> None:
    read = state["read"]
    if len(read) > MAX_READ:
        state["read"] = dict(sorted(read.items(), key=lambda kv: str(kv[1]))[-MAX_READ:])
    wrote = state["wrote"]
    if len(wrote) > MAX_WROTE:  # insertion order: the oldest written first
        state["wrote"] = dict(list(wrote.items())[-MAX_WROTE:])
    state["errors"] = state["errors"][-MAX_ERRORS:]
