"""The journal of what write tools did, beside the index (docs/sharing.md, "Undo").

``<index>/journal/entries.jsonl`` holds one line per change a write tool made to a note file
(a write, an edit, a task close, a supersede's new note, a delete, and an undo's own changes):
who, which tool, when, the note's path, and the SHA-256 of its bytes before and after (None:
no file). ``<index>/journal/blobs/<sha256>`` holds each earlier content once, so that
``vault-mem undo`` can put a note back byte for byte, with or without git. It is kept when the
index is rebuilt (``store.KEPT_ON_REBUILD``) and bounded: entries older than ``MAX_AGE_DAYS``,
past ``MAX_ENTRIES``, or whose contents would take the blobs past ``MAX_BYTES`` are dropped,
oldest first, with the blobs no entry names any more.

Appends and pruning take a file lock, so two servers on one vault journal side by side; a
reader needs no lock (a line is appended whole, a pruned file replaces the old one whole).
Recording never fails a write that already landed: it returns a warning instead.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vault_mem.history import filelocks
from vault_mem.vault.dates import iso
from vault_mem.vault.portable import O_BINARY, replace_file

JOURNAL_DIR = "journal"
ENTRIES = "entries.jsonl"
MAX_AGE_DAYS = 30
MAX_ENTRIES = 20_000
MAX_BYTES = 64 * 1024 * 1024  # earlier contents kept, in all
PRUNE_EVERY = 60.0  # seconds between looks at the limits in one process (and one at its first record)
PRUNE_TO = 0.9  # a prune keeps this share of each limit, so the next one is thousands of changes away
_pruned: dict[str, float] = {}
_prune_guard = threading.Lock()


@dataclass(frozen=True)
class Entry:
    """One change to one note file. ``before``/``after``: SHA-256 of the bytes, None for no file."""

    t: float  # POSIX seconds
    agent: str
    tool: str
    path: str  # the note's vault-relative path (where it was, for a delete)
    fsrel: str  # the same as the OS spells it
    title: str
    uid: str
    before: str | None
    after: str | None
    trash: str | None = None  # where a delete moved the file (.trash/...)

    @property
    def time(self) -> str:
        return iso(dt.datetime.fromtimestamp(self.t, dt.UTC))

    def public(self) -> dict[str, Any]:
        return {"time": self.time, "agent": self.agent, "tool": self.tool, "path": self.path,
                "title": self.title, "uid": self.uid, **({"trash": self.trash} if self.trash else {})}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def journal_dir(index_dir: Path) -> Path:
    return index_dir / JOURNAL_DIR


def record(index_dir: Path, agent: str, tool: str, changes: list[dict[str, Any]]) -> str | None:
    """Journal ``changes`` (each: path, fsrel, title, uid, before bytes|None, after bytes|None,
    trash) made by ``agent`` with ``tool``. Returns None, or a warning when it could not."""
    folder = journal_dir(index_dir)
    try:
        (folder / "blobs").mkdir(parents=True, exist_ok=True)
        now = time.time()
        lines = []
        for change in changes:
            before, after = change.get("before"), change.get("after")
            entry = Entry(t=now, agent=agent, tool=tool, path=change["path"],
                          fsrel=change.get("fsrel") or change["path"], title=str(change.get("title") or ""),
                          uid=str(change.get("uid") or ""), before=digest(before) if before is not None else None,
                          after=digest(after) if after is not None else None, trash=change.get("trash"))
            lines.append(json.dumps(asdict(entry), ensure_ascii=False, default=str))
        # Blobs too under the lock: a prune in another process removes every blob no entry names.
        with filelocks.held(folder / "lock"):
            for change in changes:
                if change.get("before") is not None:
                    _keep_blob(folder, change["before"])
            _append(folder / ENTRIES, lines)
        # Made durable once the lock is free: the next change can be appended meanwhile, and
        # one fsync then covers every line written before it.
        _sync(folder / ENTRIES)
    except OSError as exc:
        return f"the change is saved, but it could not be journaled for undo ({exc.strerror or exc})"
    if _prune_due(folder):
        _prune_if_over(index_dir, now)
    return None


def _prune_if_over(index_dir: Path, now: float) -> None:
    """Prune when a limit is passed. The look needs no lock and parses one line: a prune of a
    full journal with nothing to drop held the lock every write waits for, once a minute in each
    process that writes, where the look (mostly listing the blobs' sizes) holds none; and a prune
    that drops something leaves a tenth of each limit free (``PRUNE_TO``), so the next is about
    2,000 changes away (docs/perf/journal-prune.md)."""
    folder = journal_dir(index_dir)
    try:
        if _over_limits(folder, now):
            with filelocks.held(folder / "lock"):
                prune(index_dir, now)
    except OSError:  # the journal stays as it is, and the next look tries again
        pass


def _over_limits(folder: Path, now: float) -> bool:
    try:
        data = (folder / ENTRIES).read_bytes()
    except FileNotFoundError:
        return False
    first = next(_entries_of(data[:data.find(b"\n") + 1] if b"\n" in data else data), None)
    return _past_limits(data.count(b"\n"), first, lambda: sum(_blob_sizes(folder).values()), now)


def _past_limits(count: int, oldest: Entry | None, blob_bytes: Callable[[], int], now: float) -> bool:
    """Whether a journal of ``count`` entries, the oldest ``oldest``, holding ``blob_bytes()`` of
    earlier contents (asked last: it lists the blobs), is past one of its limits."""
    return (count > MAX_ENTRIES or (oldest is not None and oldest.t < now - MAX_AGE_DAYS * 86400)
            or blob_bytes() > MAX_BYTES)


def _keep_blob(folder: Path, data: bytes) -> None:
    path = folder / "blobs" / digest(data)
    if path.exists():
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    replace_file(tmp, path)


def _append(path: Path, lines: list[str]) -> None:
    with open(path, "ab") as out:
        if out.tell() > 0:  # a line torn by a crash must not swallow the next one
            with open(path, "rb") as tail:
                tail.seek(-1, os.SEEK_END)
                if tail.read(1) != b"\n":
                    out.write(b"\n")
        out.write("".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))


def _sync(path: Path) -> None:
    """Flush ``path`` to the disk (through an fd open for writing: Windows flushes no other). When
    a prune replaced the file meanwhile, the new file is flushed: it holds the newest lines too."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | O_BINARY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prune_due(folder: Path) -> bool:
    key = str(folder)
    with _prune_guard:
        last = _pruned.get(key)
        now = time.monotonic()
        if last is not None and now - last < PRUNE_EVERY:
            return False
        _pruned[key] = now
        return True


def entries(index_dir: Path) -> list[Entry]:
    """Every entry, oldest first (a line that does not parse, as a crash may leave, is skipped)."""
    return list(_read(journal_dir(index_dir) / ENTRIES))


def _read(path: Path) -> Iterator[Entry]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    yield from _entries_of(data)


def _entries_of(data: bytes) -> Iterator[Entry]:
    fields = set(Entry.__dataclass_fields__)
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        with contextlib.suppress(ValueError, TypeError):
            raw = json.loads(line)
            if isinstance(raw, dict) and fields >= set(raw):
                yield Entry(**raw)


def blob(index_dir: Path, sha: str) -> bytes | None:
    """The content whose SHA-256 is ``sha``, or None when the journal no longer holds it."""
    try:
        data = (journal_dir(index_dir) / "blobs" / sha).read_bytes()
    except OSError:
        return None
    return data if digest(data) == sha else None


def prune(index_dir: Path, now: float | None = None) -> int:
    """Drop the oldest entries until the journal is within ``PRUNE_TO`` of each limit (the caller
    holds the journal's lock); returns how many. With none past a limit it is already there."""
    folder = journal_dir(index_dir)
    kept = entries(index_dir)
    total = len(kept)
    now = now or time.time()
    sizes = _blob_sizes(folder)
    share = PRUNE_TO if _past_limits(len(kept), kept[0] if kept else None, lambda: sum(sizes.values()), now) else 1.0
    cutoff = now - MAX_AGE_DAYS * 86400 * share
    kept = [e for e in kept if e.t >= cutoff][-int(MAX_ENTRIES * share):]
    used, start = 0, len(kept)
    counted: set[str] = set()
    for i in range(len(kept) - 1, -1, -1):  # newest first, while the contents fit
        sha = kept[i].before
        if sha is not None and sha not in counted:
            counted.add(sha)
            used += sizes.get(sha, 0)
        if used > MAX_BYTES * share:
            break
        start = i
    kept = kept[start:]
    if len(kept) < total:
        tmp = folder / f".{ENTRIES}.{os.getpid()}.tmp"
        tmp.write_text("".join(json.dumps(asdict(e), ensure_ascii=False) + "\n" for e in kept),
                       encoding="utf-8", errors="surrogateescape")
        replace_file(tmp, folder / ENTRIES)
    named = {e.before for e in kept}
    for sha in sizes:
        if sha not in named:
            with contextlib.suppress(OSError):
                (folder / "blobs" / sha).unlink()
    return total - len(kept)


def _blob_sizes(folder: Path) -> dict[str, int]:
    sizes = {}
    with contextlib.suppress(OSError), os.scandir(folder / "blobs") as found:
        for item in found:
            with contextlib.suppress(OSError):
                if not item.name.startswith("."):
                    sizes[item.name] = item.stat().st_size
                elif time.time() - item.stat().st_mtime > 600:  # a temp file a killed writer left
                    os.unlink(item.path)
    return sizes
