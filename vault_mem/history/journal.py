"""The journal of what write tools did, in the history folder (history/location.py; docs/sharing.md,
"What an agent did, and undo").

``<history>/journal/entries.jsonl`` holds one line per change a write tool made to a note file
(a write, an edit, a task close, a supersede's new note, a delete, and an undo's own changes):
who, which tool, when, the note's path, and the SHA-256 of its bytes before and after (None:
no file). ``<history>/journal/blobs/<sha256>`` holds each earlier content once, so that
``vault-mem undo`` can put a note back byte for byte, with or without git.

Bounded per agent (names in any case), so that one agent's flood of changes drops only its own
oldest entries: an agent's entries past its age, count or earlier-contents share (the ``journal_``
settings) are dropped, oldest first; past the totals of all agents together, the agents holding
the most give up their oldest until all fit. The
blobs no entry names any more go too, and ``dropped.json`` keeps, per agent, how much was dropped
and up to when, for ``vault-mem log`` and ``undo`` to say.

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
import re
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vault_mem.history import filelocks, location
from vault_mem.history.agentstate import agent_key
from vault_mem.settings import Settings
from vault_mem.vault.dates import iso
from vault_mem.vault.portable import O_BINARY, replace_file

JOURNAL_DIR = "journal"
ENTRIES = "entries.jsonl"
DROPPED = "dropped.json"
_pruned: dict[str, tuple[float, int, int]] = {}  # folder -> (last look, entries and bytes recorded since)
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
    # The file a symlink made the note's path when it changed (vault-relative), None for none: the
    # page shows the change only to whoever may read that file too (docs/sharing.md, "Symlinks").
    real: str | None = None
    # The outermost folder this change made for the note (vault-relative; the folders from it down
    # to the note's were all made by it), for an undo to remove once empty. Written only when set.
    made: str | None = None

    @property
    def time(self) -> str:
        return iso(dt.datetime.fromtimestamp(self.t, dt.UTC))

    def public(self) -> dict[str, Any]:
        return {"time": self.time, "agent": self.agent, "tool": self.tool, "path": self.path,
                "title": self.title, "uid": self.uid, **({"trash": self.trash} if self.trash else {})}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Dropped:
    """What the journal dropped of one agent's entries, in all: ``changes`` entries, the newest of
    them made at ``until`` (POSIX seconds), the last drop at ``at``, and why."""

    agent: str
    changes: int
    until: float
    at: float
    why: str

    def public(self) -> dict[str, Any]:
        def when(t: float) -> str:
            return iso(dt.datetime.fromtimestamp(t, dt.UTC))
        return {"agent": self.agent, "changes": self.changes, "until": when(self.until),
                "at": when(self.at), "why": self.why}


def journal_dir(history_dir: Path) -> Path:
    return history_dir / JOURNAL_DIR


def record(history_dir: Path, agent: str, tool: str, changes: list[dict[str, Any]], *,
           config: Settings) -> str | None:
    """Journal ``changes`` (each: path, fsrel, title, uid, before bytes|None, after bytes|None,
    trash, real) made by ``agent`` with ``tool`` in the history folder ``history_dir``
    (``VaultIndex.history_dir``). Returns None, or a warning when it could not."""
    folder = journal_dir(history_dir)
    try:
        location.prepare(history_dir)
        (folder / "blobs").mkdir(parents=True, exist_ok=True)
        now = time.time()
        lines = []
        for change in changes:
            before, after = change.get("before"), change.get("after")
            entry = Entry(t=now, agent=agent, tool=tool, path=change["path"],
                          fsrel=change.get("fsrel") or change["path"], title=str(change.get("title") or ""),
                          uid=str(change.get("uid") or ""), before=digest(before) if before is not None else None,
                          after=digest(after) if after is not None else None, trash=change.get("trash"),
                          real=change.get("real"), made=change.get("made"))
            lines.append(_line(entry))
        # Blobs too under the lock: a prune in another process removes every blob no entry names.
        with filelocks.locked(folder / "lock", config.file_lock_poll):
            for change in changes:
                if change.get("before") is not None:
                    _keep_blob(folder, change["before"], config)
            _append(folder / ENTRIES, lines)
        # Made durable once the lock is free: the next change can be appended meanwhile, and
        # one fsync then covers every line written before it.
        _sync(folder / ENTRIES)
    except OSError as exc:
        return f"the change is saved, but it could not be journaled for undo ({exc.strerror or exc})"
    added = sum(len(c["before"]) for c in changes if c.get("before") is not None)
    if _prune_due(folder, len(changes), added, config):
        _prune_if_over(history_dir, now, config)
    return None


def _line(entry: Entry) -> str:
    """An entry as its journal line; ``real`` and ``made`` only when set, so that the lines of
    every other change (most notes are no link, most changes make no folder) stay readable by a
    version that does not know them."""
    fields = asdict(entry)
    for optional in ("real", "made"):
        if fields[optional] is None:
            del fields[optional]
    return json.dumps(fields, ensure_ascii=False, default=str)


def _prune_if_over(history_dir: Path, now: float, config: Settings) -> None:
    """Prune when an agent is past a limit, or all are past a total. The look takes no lock
    (every write waits for the journal's), and a prune that drops something leaves a tenth of
    each limit free (``settings.journal_prune_to``), so the next one is thousands of changes away."""
    folder = journal_dir(history_dir)
    try:
        if _over_limits(folder, now, config):
            with filelocks.locked(folder / "lock", config.file_lock_poll):
                prune(history_dir, now, config=config)
    except OSError:  # the journal stays as it is, and the next look tries again
        pass


# What the look reads of each line as ``record`` writes it (its time, agent and earlier content),
# without parsing the JSON: a parse of every entry cost most of a look. A line it misses is only
# counted by the prune, which parses them all.
_LINE = re.compile(rb'^\{"t": ([0-9.eE+-]+), "agent": ("(?:[^"\\\n]|\\.)*")[^\n]*?"before": (?:"([0-9a-f]{64})"|null)',
                   re.MULTILINE)


def _over_limits(folder: Path, now: float, config: Settings) -> bool:
    """Whether an agent is past a limit or all are past a total, as the look sees it."""
    try:
        data = (folder / ENTRIES).read_bytes()
    except FileNotFoundError:
        return False
    counts: dict[bytes, int] = {}
    named: dict[bytes, set[bytes]] = {}
    oldest = None
    for match in _LINE.finditer(data):
        if oldest is None:
            oldest = float(match[1])
        counts[match[2]] = counts.get(match[2], 0) + 1
        if match[3]:
            named.setdefault(match[2], set()).add(match[3])
    if oldest is not None and oldest < now - config.journal_max_age_days * 86400:
        return True
    by_key: dict[str, tuple[int, set[bytes]]] = {}
    for token, count in counts.items():  # one agent may be spelled in several cases
        with contextlib.suppress(ValueError):
            key = agent_key(str(json.loads(token)))
            seen, shas = by_key.get(key, (0, set()))
            by_key[key] = (seen + count, shas | named.get(token, set()))
    if (any(count > config.journal_max_entries for count, _ in by_key.values())
            or sum(counts.values()) > config.journal_total_entries):
        return True
    sizes = _blob_sizes(folder)
    held = [sum(sizes.get(sha.decode(), 0) for sha in shas) for _, shas in by_key.values()]
    return (any(size > config.journal_max_bytes for size in held)
            or sum(sizes.values()) > config.journal_total_bytes)


def _plan(everything: list[Entry], sizes: dict[str, int], now: float,
          config: Settings) -> dict[str, tuple[set[int], str]]:
    """Which entries (positions in ``everything``) a prune drops, by agent key, and why; empty
    when no agent is past a limit and all fit the totals."""
    keep_share = config.journal_prune_to
    by_agent: dict[str, list[int]] = {}
    for i, entry in enumerate(everything):
        by_agent.setdefault(agent_key(entry.agent), []).append(i)
    plan: dict[str, tuple[set[int], str]] = {}
    kept_of: dict[str, list[int]] = {}
    for key, mine in by_agent.items():
        why = _past_limit([everything[i] for i in mine], sizes, now, config)
        if why:
            cutoff = now - config.journal_max_age_days * 86400 * keep_share
            keep = [i for i in mine if everything[i].t >= cutoff][-int(config.journal_max_entries * keep_share):]
            keep = _fitting(everything, keep, sizes, config.journal_max_bytes * keep_share)
            plan[key] = (set(mine) - set(keep), why)
            mine = keep
        kept_of[key] = mine
    counts = {key: len(mine) for key, mine in kept_of.items()}
    usage = {key: _bytes_of(everything, mine, sizes) for key, mine in kept_of.items()}
    named = {everything[i].before for mine in kept_of.values() for i in mine}
    over_entries = sum(counts.values()) > config.journal_total_entries
    over_bytes = sum(sizes.get(sha, 0) for sha in named if sha is not None) > config.journal_total_bytes
    if over_entries or over_bytes:
        # Past a total: the agents holding the most are cut to one level, the rest untouched.
        no_cut = float("inf")
        top_count = _level(list(counts.values()), config.journal_total_entries * keep_share) if over_entries else no_cut
        top_bytes = _level(list(usage.values()), config.journal_total_bytes * keep_share) if over_bytes else no_cut
        for key, mine in kept_of.items():
            keep = mine[len(mine) - int(min(len(mine), top_count)):]
            keep = _fitting(everything, keep, sizes, top_bytes)
            if len(keep) < len(mine):
                gone, why = plan.get(key, (set(), ""))
                total = (f"{config.journal_total_entries:,} changes" if over_entries
                         else f"{_mib(config.journal_total_bytes)} of earlier contents")
                plan[key] = (gone | (set(mine) - set(keep)),
                             why or f"the journal was past its total of {total}, and this agent held the most")
    return plan


def _past_limit(mine: list[Entry], sizes: dict[str, int], now: float, config: Settings) -> str:
    """Why one agent's entries (oldest first) are past its limits, or ''."""
    if len(mine) > config.journal_max_entries:
        return f"past its share of {config.journal_max_entries:,} changes"
    if mine and mine[0].t < now - config.journal_max_age_days * 86400:
        return f"older than {config.journal_max_age_days} days"
    if _bytes_of(mine, range(len(mine)), sizes) > config.journal_max_bytes:
        return f"past its share of {_mib(config.journal_max_bytes)} of earlier contents"
    return ""


def _mib(size: float) -> str:
    return f"{size / 1024 / 1024:g} MiB"


def _bytes_of(everything: list[Entry], positions: Iterable[int], sizes: dict[str, int]) -> int:
    """The earlier contents the entries at ``positions`` name, each counted once."""
    named = {everything[i].before for i in positions}
    return sum(sizes.get(sha, 0) for sha in named if sha is not None)


def _fitting(everything: list[Entry], positions: list[int], sizes: dict[str, int], most: float) -> list[int]:
    """The newest of ``positions`` whose earlier contents fit in ``most`` bytes."""
    used, start = 0, len(positions)
    counted: set[str] = set()
    for n in range(len(positions) - 1, -1, -1):  # newest first, while the contents fit
        sha = everything[positions[n]].before
        if sha is not None and sha not in counted:
            counted.add(sha)
            used += sizes.get(sha, 0)
        if used > most:
            break
        start = n
    return positions[start:]


def _level(held: list[int], total: float) -> float:
    """The largest level L such that every share cut down to L fits ``total`` together."""
    rest, ordered = total, sorted(held)
    for n, share in enumerate(ordered):
        if share * (len(ordered) - n) > rest:
            return rest / (len(ordered) - n)
        rest -= share
    return float("inf")


def _keep_blob(folder: Path, data: bytes, config: Settings) -> None:
    path = folder / "blobs" / digest(data)
    if path.exists():
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    replace_file(tmp, path, config=config)


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


def _prune_due(folder: Path, count: int, added: int, config: Settings) -> bool:
    """Whether to look at the limits now: at this process's first record, then once a minute,
    or sooner once it recorded a 16th of an agent's share (a flood is cut while it floods)."""
    key = str(folder)
    with _prune_guard:
        now = time.monotonic()
        last, entries_since, bytes_since = _pruned.get(key, (None, 0, 0))
        entries_since, bytes_since = entries_since + count, bytes_since + added
        look = config.journal_look_after
        if (last is not None and now - last < config.journal_prune_every
                and entries_since < config.journal_max_entries / look
                and bytes_since < config.journal_max_bytes / look):
            _pruned[key] = (last, entries_since, bytes_since)
            return False
        _pruned[key] = (now, 0, 0)
        return True


def entries(history_dir: Path) -> list[Entry]:
    """Every entry, oldest first (a line that does not parse, as a crash may leave, is skipped)."""
    return list(_read(journal_dir(history_dir) / ENTRIES))


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


def blob(history_dir: Path, sha: str) -> bytes | None:
    """The content whose SHA-256 is ``sha``, or None when the journal no longer holds it."""
    try:
        data = (journal_dir(history_dir) / "blobs" / sha).read_bytes()
    except OSError:
        return None
    return data if digest(data) == sha else None


def prune(history_dir: Path, now: float | None = None, *, config: Settings) -> int:
    """Drop what ``_plan`` says, keep a note of it in ``dropped.json``, and remove the blobs no
    entry names any more (the caller holds the journal's lock); returns how many entries went."""
    folder = journal_dir(history_dir)
    everything = entries(history_dir)
    now = now or time.time()
    sizes = _blob_sizes(folder)
    plan = _plan(everything, sizes, now, config)
    gone = set().union(*(positions for positions, _ in plan.values()))
    kept_entries = [e for i, e in enumerate(everything) if i not in gone]
    if gone:
        _note_dropped(folder, config, {key: ([everything[i] for i in sorted(positions)], why)
                               for key, (positions, why) in plan.items() if positions}, now)
        tmp = folder / f".{ENTRIES}.{os.getpid()}.tmp"
        tmp.write_text("".join(_line(e) + "\n" for e in kept_entries),
                       encoding="utf-8", errors="surrogateescape")
        replace_file(tmp, folder / ENTRIES, config=config)
    named = {e.before for e in kept_entries}
    for sha in sizes:
        if sha not in named:
            with contextlib.suppress(OSError):
                (folder / "blobs" / sha).unlink()
    return len(gone)


def _note_dropped(folder: Path, config: Settings, gone: dict[str, tuple[list[Entry], str]], now: float) -> None:
    notes = {agent_key(d.agent): d for d in _dropped_in(folder)}
    for key, (lost, why) in gone.items():
        earlier = notes.get(key)
        notes[key] = Dropped(agent=lost[-1].agent, changes=len(lost) + (earlier.changes if earlier else 0),
                             until=max([e.t for e in lost] + ([earlier.until] if earlier else [])), at=now, why=why)
    tmp = folder / f".{DROPPED}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({key: asdict(d) for key, d in sorted(notes.items())}, ensure_ascii=False),
                   encoding="utf-8", errors="surrogateescape")
    replace_file(tmp, folder / DROPPED, config=config)


def dropped(history_dir: Path, agent: str | None = None) -> list[Dropped]:
    """What the journal dropped, per agent (only ``agent``'s, in any case, when given)."""
    return [d for d in _dropped_in(journal_dir(history_dir)) if agent is None or agent_key(d.agent) == agent_key(agent)]


def _dropped_in(folder: Path) -> list[Dropped]:
    try:
        raw = json.loads((folder / DROPPED).read_text(encoding="utf-8", errors="surrogateescape"))
    except (OSError, ValueError):
        return []
    found = []
    for item in raw.values() if isinstance(raw, dict) else []:
        with contextlib.suppress(TypeError, ValueError):
            found.append(Dropped(agent=str(item["agent"]), changes=int(item["changes"]), until=float(item["until"]),
                                 at=float(item["at"]), why=str(item["why"])))
    return found


def adopt(old_dir: Path, history_dir: Path, config: Settings) -> bool:
    """Move the journal an older version kept in ``old_dir`` (the index folder) into
    ``history_dir``, merged with the entries there (each entry once, oldest first); True when
    there was one. Under both journals' locks; the old files go only once the new ones are whole."""
    old, new = journal_dir(old_dir), journal_dir(history_dir)
    if not (old / ENTRIES).exists() and not (old / "blobs").is_dir():
        return False
    (new / "blobs").mkdir(parents=True, exist_ok=True)
    with filelocks.locked(new / "lock", config.file_lock_poll), filelocks.locked(old / "lock", config.file_lock_poll):
        for sha in _blob_sizes(old):
            if not (new / "blobs" / sha).exists():
                shutil.copyfile(old / "blobs" / sha, new / "blobs" / f".{sha}.tmp")
                replace_file(new / "blobs" / f".{sha}.tmp", new / "blobs" / sha, config=config)
        merged = sorted(dict.fromkeys([*_read(new / ENTRIES), *_read(old / ENTRIES)]), key=lambda e: e.t)
        tmp = new / f".{ENTRIES}.{os.getpid()}.tmp"
        tmp.write_text("".join(_line(e) + "\n" for e in merged),
                       encoding="utf-8", errors="surrogateescape")
        replace_file(tmp, new / ENTRIES, config=config)
        _sync(new / ENTRIES)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(old / ENTRIES)
        shutil.rmtree(old / "blobs", ignore_errors=True)
    return True


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
