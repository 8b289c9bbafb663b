"""What each agent has seen, in the history folder (history/location.py; docs/sharing.md, "Handoffs
and the inbox").

``<history>/agents/<name>-<hash>.json`` per agent (names compared case-insensitively):

- ``read``: the uids of notes addressed to it that it has read with memory_read, with when;
- ``wrote``: the notes it wrote (path -> uid), to tell it when someone else deleted or moved
  one away (``lost``);
- ``errors``: its writes that did not fully land (``persist_error``), until its next call.

Never written into a note (reading never modifies a user's file), and apart from the index, so
it survives restarts, rebuilds and a deleted index folder.

The file's first line is the whole state (a JSON object, led by a ``gen`` token new at each
rewrite); each later line is one change, a JSON list of steps (``Changes``). A change is made
under a file lock and appended as one line, so two servers on one vault keep each other's
changes and a busy agent's save costs one short line, not its thousands of entries written
again (docs/perf/agent-state-lines.md). When the changes
outgrow the state, the file is rewritten whole (temp and rename). A reader needs no lock: it
parses the lines it has not seen yet (the ``gen`` tells it the file was rewritten) and stops
at a line not yet whole; a line left torn by a crash is dropped at the next rewrite.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from vault_mem.history import filelocks, location
from vault_mem.settings import Settings
from vault_mem.vault.portable import replace_file
from vault_mem.vault.reader import VersionKey, version_key

AGENTS_DIR = "agents"
MAPS = ("read", "wrote")
_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_HEAD = len('{"gen": "') + 16  # the bytes that tell one rewrite of a file from the next
T = TypeVar("T")


@dataclass(frozen=True)
class _Parsed:
    """One version of a state file as this process parsed it."""

    stat: VersionKey  # (mtime, size, inode, device) when it was read
    state: dict[str, Any]  # shared: never changed
    end: int  # bytes parsed, up to the end of the last whole line
    size: int  # bytes read
    base: int  # bytes of the first line (the whole state)
    head: bytes | None  # the first _HEAD bytes when the file has a gen (None: rewrite it at the next change)


_cache: dict[str, _Parsed] = {}
_cache_lock = threading.Lock()


def agent_key(name: str) -> str:
    return name.strip().lower()


def state_file(history_dir: Path, agent: str) -> Path:
    key = agent_key(agent)
    stem = _UNSAFE.sub("_", key)[:40] or "agent"
    return history_dir / AGENTS_DIR / f"{stem}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}.json"


def empty() -> dict[str, Any]:
    return {"read": {}, "wrote": {}, "errors": []}


class Changes:
    """What ``change`` hands its edit: the state as it is now (``read``, ``wrote``, ``errors``;
    read them, change them only through the methods) and the steps taken so far."""

    def __init__(self, state: dict[str, Any], config: Settings) -> None:
        self.config = config
        self._state = state
        self._copied: set[str] = set()
        self.steps: list[list[Any]] = []

    @property
    def state(self) -> dict[str, Any]:
        return self._state

    @property
    def read(self) -> dict[str, Any]:
        read: dict[str, Any] = self._state["read"]
        return read

    @property
    def wrote(self) -> dict[str, Any]:
        wrote: dict[str, Any] = self._state["wrote"]
        return wrote

    @property
    def errors(self) -> list[Any]:
        errors: list[Any] = self._state["errors"]
        return errors

    def put(self, where: str, key: str, value: Any) -> None:
        """Set ``key`` of ``read`` or ``wrote`` to ``value``, as its newest entry."""
        _apply(self._own(where), ["put", where, key, value])
        self.steps.append(["put", where, key, value])

    def drop(self, where: str, key: str) -> None:
        """Remove ``key`` from ``read`` or ``wrote`` (nothing when it is not there)."""
        if key in self._state[_named(where)]:
            _apply(self._own(where), ["drop", where, key])
            self.steps.append(["drop", where, key])

    def set_errors(self, errors: list[Any]) -> None:
        errors = list(errors)[-self.config.state_max_errors:]
        if errors != self._state["errors"]:
            self._state["errors"] = errors
            self.steps.append(["errors", errors])

    def add_error(self, error: dict[str, Any]) -> None:
        self.set_errors([*self._state["errors"], error])

    def _own(self, where: str) -> dict[str, Any]:
        """``where``'s mapping, copied before its first change (the one loaded is shared)."""
        if _named(where) not in self._copied:
            self._state[where] = dict(self._state[where])
            self._copied.add(where)
        mapping: dict[str, Any] = self._state[where]
        return mapping

    def bound(self) -> None:
        """Forget the oldest entries past MAX_READ and MAX_WROTE (entries are kept oldest first)."""
        config = self.config
        for where, most in (("read", config.state_max_read), ("wrote", config.state_max_wrote)):
            extra = len(self._state[where]) - most
            for key in list(islice(self._state[where], max(0, extra))):
                self.drop(where, key)


def _named(where: str) -> str:
    """``where``, when it names one of the state's mappings (else ValueError)."""
    if where not in MAPS:
        raise ValueError(f"an agent's state has no {where!r}: it has {', '.join(MAPS)}")
    return where


def load(history_dir: Path, agent: str) -> dict[str, Any]:
    """The agent's state (an empty one when it has none or the file is damaged), shared with
    other callers while the file is unchanged: read it, never change it (``change`` does)."""
    return load_version(history_dir, agent)[0]


def load_version(history_dir: Path, agent: str) -> tuple[dict[str, Any], Hashable]:
    """The agent's state as ``load`` gives it, and what names this version of it (equal for
    the same version, in this process), to key what is derived from it."""
    path = state_file(history_dir, agent)
    parsed = _parsed(path)
    if parsed is None:
        return empty(), (str(path), None)
    return parsed.state, (str(path), parsed.stat, parsed.end)


def change(history_dir: Path, agent: str, edit: Callable[[Changes], T], *, config: Settings) -> T:
    """Apply ``edit`` to the agent's state under the lock and save what it changed; returns what
    ``edit`` returned (nothing is saved when it raises). Raises OSError when the state folder
    cannot be written."""
    path = state_file(history_dir, agent)
    location.prepare(history_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with filelocks.locked(path.parent / ".lock", config.file_lock_poll):
        # Under the lock nobody else writes the file: what this process parsed or wrote last is
        # the file's while its stat is the same, and only lines added since are read.
        parsed = _parsed(path, strict=True)
        before = parsed.state if parsed is not None else empty()
        changes = Changes({"read": before["read"], "wrote": before["wrote"], "errors": before["errors"]}, config)
        result = edit(changes)
        changes.bound()
        if not changes.steps:
            return result
        state = changes.state
        line = (json.dumps(changes.steps, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")
        if parsed is None or parsed.head is None or parsed.end != parsed.size or \
                parsed.size + len(line) > 2 * parsed.base + config.state_rewrite_slack:
            _rewrite(path, agent, state, config)
        else:
            with open(path, "ab") as file:
                file.write(line)
            _remember(path, state, parsed.end + len(line), parsed.base, parsed.head)
    return result


def adopt(old_dir: Path, history_dir: Path, config: Settings) -> bool:
    """Move the agents' states an older version kept in ``old_dir`` (the index folder) into
    ``history_dir``; True when there were some. A state already there too gets the old one's
    read and written notes it lacks. Under both folders' locks."""
    old, new = old_dir / AGENTS_DIR, history_dir / AGENTS_DIR
    found = sorted(p for p in old.glob("*.json") if not p.name.startswith(".")) if old.is_dir() else []
    if not found:
        return False
    new.mkdir(parents=True, exist_ok=True)
    with filelocks.locked(new / ".lock", config.file_lock_poll), filelocks.locked(old / ".lock", config.file_lock_poll):
        for path in found:
            target = new / path.name
            if not target.exists():
                tmp = target.with_name(f".{path.name}.{os.getpid()}.tmp")
                shutil.copyfile(path, tmp)
                replace_file(tmp, target, config=config)
            else:
                parsed = _parsed(path, strict=True)
                if parsed is not None:
                    state = _parsed(target, strict=True)
                    merged = empty() if state is None else {k: state.state[k] for k in ("read", "wrote", "errors")}
                    for where in MAPS:
                        merged[where] = {**parsed.state[where], **merged[where]}
                    _rewrite(target, _agent_named(path), merged, config)
            path.unlink()
    return True


def _agent_named(path: Path) -> str:
    """The agent name a state file was written for (its first line says), else its file's stem."""
    try:
        with open(path, "rb") as file:
            name = json.loads(file.readline().decode("utf-8", "surrogateescape")).get("agent")
    except (OSError, ValueError, AttributeError):
        name = None
    return name if isinstance(name, str) else path.stem.rsplit("-", 1)[0]


def _rewrite(path: Path, agent: str, state: dict[str, Any], config: Settings) -> None:
    whole = {"gen": secrets.token_hex(8), "agent": agent, **state}
    data = (json.dumps(whole, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    try:
        replace_file(tmp, path, config=config)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    _remember(path, state, len(data), len(data), data[:_HEAD])


def _remember(path: Path, state: dict[str, Any], end: int, base: int, head: bytes) -> None:
    stat = version_key(path)
    if stat is not None and stat[1] == end:
        with _cache_lock:
            _cache[str(path)] = _Parsed(stat, state, end, end, base, head)


def _parsed(path: Path, strict: bool = False) -> _Parsed | None:
    """The file as parsed now (None: no file): the cached parse while its stat is the same,
    that parse plus the lines added since, or a whole new parse. A file that cannot be read
    (Windows: being replaced at that moment) raises OSError when ``strict`` (a change must not
    start again from nothing), else reads as empty this once (not kept)."""
    stat = version_key(path)
    if stat is None:
        return None
    with _cache_lock:
        cached = _cache.get(str(path))
    if cached is not None and cached.stat == stat:
        return cached
    try:
        with open(path, "rb") as file:
            if cached is not None and cached.head is not None and stat[1] >= cached.end and \
                    file.read(_HEAD) == cached.head:
                file.seek(cached.end)
                parsed = _more(cached, stat, file.read())
            else:
                file.seek(0)
                parsed = _whole(stat, file.read())
    except FileNotFoundError:
        return None
    except OSError:
        if strict:
            raise
        return _Parsed(stat, empty(), 0, 0, 0, None)
    with _cache_lock:
        _cache[str(path)] = parsed
    return parsed


def _whole(stat: VersionKey, data: bytes) -> _Parsed:
    first = data.find(b"\n")
    base = len(data) if first < 0 else first + 1
    state = empty()
    head: bytes | None = None
    try:
        whole = json.loads(data[:base].decode("utf-8", "surrogateescape"))
    except ValueError:  # damaged: start again from an empty state (rewritten at the next change)
        return _Parsed(stat, state, 0, len(data), 0, None)
    if isinstance(whole, dict):
        for key, kind in (("read", dict), ("wrote", dict), ("errors", list)):
            if isinstance(whole.get(key), kind):
                state[key] = whole[key]
        if isinstance(whole.get("gen"), str) and data.startswith(b'{"gen": "') and first >= 0:
            head = data[:_HEAD]
    parsed = _Parsed(stat, state, base, base, base, head)
    return _more(parsed, stat, data[base:]) if head is not None else parsed


def _more(parsed: _Parsed, stat: VersionKey, data: bytes) -> _Parsed:
    """``parsed`` with the whole lines of ``data`` (what follows its end) applied."""
    # Each map copied before its first change, as an edit's are; a replay applies steps and no bound,
    # so the defaults' bounds are never asked.
    replay = Changes(dict(parsed.state), Settings())
    done = 0
    while True:
        stop = data.find(b"\n", done)
        if stop < 0:
            break
        try:
            steps = json.loads(data[done:stop].decode("utf-8", "surrogateescape"))
            if not isinstance(steps, list):
                raise ValueError("a change is a list of steps")
            for step in steps:
                _check(step)
        except (ValueError, TypeError, KeyError, IndexError):  # a damaged line: stop before it
            break
        for step in steps:
            if step[0] == "errors":
                replay.set_errors(step[1])
            elif step[0] == "put":
                replay.put(step[1], step[2], step[3])
            else:
                replay.drop(step[1], step[2])
        done = stop + 1
    state = replay.state if replay.steps else parsed.state
    return _Parsed(stat, state, parsed.end + done, parsed.end + len(data), parsed.base, parsed.head)


def _check(step: Any) -> None:
    """Raise ValueError unless ``step`` is a step ``Changes`` writes."""
    if not isinstance(step, list) or not step:
        raise ValueError("a step is a non-empty list")
    if step[0] == "errors" and len(step) == 2 and isinstance(step[1], list):
        return
    if step[0] in ("put", "drop") and len(step) == (4 if step[0] == "put" else 3) and step[1] in MAPS \
            and isinstance(step[2], str):
        return
    raise ValueError(f"not a step of an agent's state: {step!r:.80}")


def _apply(mapping: dict[str, Any], step: list[Any]) -> None:
    key = step[2]
    mapping.pop(key, None)
    if step[0] == "put":
        mapping[key] = step[3]


