"""``vault-mem log`` and ``vault-mem undo`` over the journal of write tools (history/journal.py;
docs/sharing.md, "What an agent did, and undo").

``plan`` groups an agent's journal entries since a moment by note and, for each note, compares
the file now with what the agent left: when they match, the note is put back as it was before
the agent's first change in that window, byte for byte (its earlier content comes from the
journal; a deleted note comes back from ``.trash/``; a note the agent created goes to
``.trash/``); when they differ, someone changed it after the agent, and it is listed and left
alone. ``apply`` does what a plan says, journals it (tool ``undo``, so the log shows it and a
second undo finds nothing to do), indexes it, and with ``git_commit`` makes it one commit.

The journal is a file anyone who can write the history folder can append to (a synced folder
may carry one), so each path it names passes the write tools' confinement (vault/paths.py)
before a plan uses it: a note (``.md``) inside the vault, outside hidden folders, and a trash
path directly under ``.trash/``. What fails is a step of its own (``refuse``), which the plan
shows and ``apply`` never does (it checks again before each step).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_mem.errors import GitError, IndexBusy, NotFound, PathRefused, VaultMemError
from vault_mem.git.commit import agent_identity, commit_paths
from vault_mem.git.repo import Repo
from vault_mem.history import journal
from vault_mem.history.agentstate import agent_key
from vault_mem.history.journal import Entry, digest
from vault_mem.search.api import VaultIndex
from vault_mem.settings import Settings
from vault_mem.vault.dates import iso
from vault_mem.vault.paths import NotANote, confine, display_path, link_target, note_file, resolves_inside
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import is_memory_name
from vault_mem.vault.writer import TRASH_DIRNAME, atomic_write, create_at, move_back, move_to_trash

UNDO_AGENT = "vault-mem"  # who the journal names for an undo's own changes
KINDS = {"memory_write": "write", "memory_edit": "edit", "memory_supersede": "supersede",
         "task_close": "close", "memory_delete": "delete", "undo": "undo", "tidy": "tidy"}


def log(index: VaultIndex, agent: str | None = None, since: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Every journaled change, newest first, by ``agent`` (any case) and at or after ``since``."""
    rows = []
    for entry in reversed(journal.entries(index.history_dir)):
        if agent is not None and agent_key(entry.agent) != agent_key(agent):
            continue
        if since is not None and entry.t < since.timestamp():
            continue
        rows.append({**entry.public(), "kind": KINDS.get(entry.tool, entry.tool)})
    return rows


def dropped(index: VaultIndex, agent: str | None = None, since: dt.datetime | None = None) -> list[dict[str, Any]]:
    """What the journal dropped of each agent's changes (``agent``'s only, when given), and only
    where the drop reaches ``since`` or later, when given: ``{agent, changes, until, at, why}``."""
    return [d.public() for d in journal.dropped(index.history_dir, agent)
            if since is None or d.until >= since.timestamp()]


@dataclass
class Step:
    """What undo does (or would do) to one note. ``action``: restore (write the earlier bytes),
    untrash (bring a deleted note back), trash (move a note the agent created to .trash/),
    leave (nothing: ``reason`` says why), or refuse (nothing: the journal names a path no write
    tool may touch; ``reason`` says which and why)."""

    path: str
    fsrel: str
    action: str
    reason: str
    before: str | None  # the SHA-256 to put back (None: no file)
    expected: str | None  # the SHA-256 the agent left (None: no file), which the file must still have
    trash: str | None = None
    title: str = ""
    uid: str = ""
    made: str | None = None  # the folder the agent's create made for the note (a trash step removes it once empty)

    def public(self) -> dict[str, Any]:
        return {"path": self.path, "action": self.action, "reason": self.reason}


def plan(index: VaultIndex, agent: str, since: dt.datetime) -> list[Step]:
    """What undoing ``agent``'s changes since ``since`` would do, one step per note it changed."""
    everything = journal.entries(index.history_dir)
    mine = [e for e in everything if agent_key(e.agent) == agent_key(agent) and e.t >= since.timestamp()]
    groups: dict[str, list[Entry]] = {}
    for entry in mine:
        groups.setdefault(entry.fsrel, []).append(entry)
    return [_step(index.root, index.history_dir, everything, group) for group in groups.values()]


def _step(root: Path, history_dir: Path, everything: list[Entry], group: list[Entry]) -> Step:
    first, last = group[0], group[-1]
    step = Step(first.path, first.fsrel, "leave", "", first.before, last.after, last.trash, first.title, first.uid)
    refused = _refusal(root, group)
    if refused:
        step.path, step.action, step.reason = display_path(first.fsrel), "refuse", refused
        return step
    now = _current(root, first.fsrel)
    if now not in (last.after, first.before) and _undone_to(everything, group, now):
        step.expected = now  # an undo took back the agent's later changes: a wider undo goes on from there
    if now != step.expected:
        if now == first.before:
            step.reason = "already as it was before the agent's change"
        else:
            step.reason = "changed after the agent by " + _who_changed(everything, last)
        return step
    if first.before is None:
        if now is None:
            step.reason = "the agent created it and deleted it; nothing to put back"
        else:
            step.action, step.reason = "trash", f"created by the agent ({KINDS.get(first.tool, first.tool)})"
            step.made = _made(first)
            if step.made:
                step.reason += f"; then the folder {step.made}/ it made, once empty"
        return step
    if now is None and last.trash and _current(root, last.trash) == first.before:
        step.action, step.reason = "untrash", f"deleted by the agent; back from {last.trash}"
        return step
    if journal.blob(history_dir, first.before) is None:
        step.reason = "the journal no longer holds its earlier content (past its size or age limit)"
        return step
    step.action = "untrash" if now is None else "restore"
    step.trash = None
    changed = sorted({KINDS.get(e.tool, e.tool) for e in group})
    step.reason = f"{', '.join(changed)} by the agent; earlier content from the journal"
    return step


def _undone_to(everything: list[Entry], group: list[Entry], now: str | None) -> bool:
    """Whether the note is where an undo (``UNDO_AGENT``'s own changes) put it back to, at a state
    the agent's changes in ``group`` passed through, and nobody else changed it since the agent's
    first change: then an undo reaching further back is no one else's change to respect."""
    first = group[0]
    later = [e for e in everything if e.fsrel == first.fsrel and e.t >= first.t and e not in group]
    if not later or any(e.tool != "undo" or agent_key(e.agent) != agent_key(UNDO_AGENT) for e in later):
        return False
    return later[-1].after == now and now in {e.before for e in group[1:]} | {e.after for e in group}


def _made(first: Entry) -> str | None:
    """The folder the agent's create made (``Entry.made``), when it is one above the note and no
    hidden one; None otherwise (a journal line naming another is not followed)."""
    made = (first.made or "").strip("/")
    if not made or not first.fsrel.startswith(made + "/") or any(
            part in ("", ".", "..") or part.startswith(".") for part in made.split("/")):
        return None
    return made


def _remove_made(root: Path, steps: list[Step]) -> list[str]:
    """Remove the folders the undone creates made, each only when empty: from the note's folder up
    to the one its create made, deepest first; the vault-relative folders removed."""
    removed: list[str] = []
    chains = set()
    for step in steps:
        if step.made:
            folder = step.fsrel.rpartition("/")[0]
            while folder and folder != step.made and folder.startswith(step.made + "/"):
                chains.add(folder)
                folder = folder.rpartition("/")[0]
            chains.add(step.made)
    for folder in sorted(chains, key=lambda f: (-f.count("/"), f)):
        try:
            path = confine(root, folder, "folder")
            if path.is_symlink() or not path.is_dir():
                continue
            path.rmdir()  # only an empty folder goes
        except (OSError, VaultMemError):
            continue
        removed.append(folder)
    return removed


def _refusal(root: Path, group: list[Entry]) -> str:
    """Why undo may not touch what ``group``'s entries name (the write tools' rules), or ''."""
    for entry in group:
        try:
            _note_target(root, entry.fsrel)
            if entry.path != display_path(entry.fsrel):
                raise PathRefused("path", f"the journal shows {entry.path!r} for the file {entry.fsrel!r}")
            if entry.trash is not None:
                _trash_target(root, entry.trash)
        except PathRefused as exc:
            return f"refused: the journal names a path no write tool may touch ({exc})"
    return ""


def _note_target(root: Path, fsrel: str) -> Path:
    """The note file ``fsrel`` names, confined as a write tool's target; PathRefused when not."""
    target = confine(root, fsrel, "path", note=True)
    if not fsrel.strip("/") or not is_memory_name(target.name):
        raise PathRefused("path", f"{fsrel!r} is not a note: only .md files are put back")
    return target


def _trash_target(root: Path, trash: str) -> Path:
    """The file in ``.trash/`` that ``trash`` names (directly in it, as memory_delete puts one)."""
    folder, _, name = trash.partition("/")
    trash_dir = root / TRASH_DIRNAME
    if folder != TRASH_DIRNAME or "/" in name or trash_dir.is_symlink():
        raise PathRefused("trash", f"{trash!r} is not a note in {TRASH_DIRNAME}/")
    target = confine(trash_dir, name, "trash")
    if not is_memory_name(target.name) or not resolves_inside(root, target):
        raise PathRefused("trash", f"{trash!r} is not a note in {TRASH_DIRNAME}/")
    try:  # a symlink in the trash comes back only when it leads to a note (docs/safety.md)
        link_target(root, f"{TRASH_DIRNAME}/{name}")
    except NotANote as exc:
        raise PathRefused("trash", f"{trash!r} {exc}") from None
    return target


def _current(root: Path, fsrel: str) -> str | None:
    try:
        return digest(note_file(root, fsrel).read_bytes())
    except (OSError, VaultMemError):
        return None


def _who_changed(everything: list[Entry], last: Entry) -> str:
    later = [e for e in everything if e.fsrel == last.fsrel and e.t >= last.t and e is not last
             and agent_key(e.agent) != agent_key(last.agent)]
    if later:
        newest = later[-1]
        return f"{newest.agent} ({KINDS.get(newest.tool, newest.tool)} at {newest.time}); left alone"
    return "someone else (a person, an editor or git); left alone"


def apply(index: VaultIndex, steps: list[Step], agent: str, since: dt.datetime,
          git_commit: bool = False) -> dict[str, Any]:
    """Do ``steps``; returns ``{done, failed, warnings, commit, folders_removed}`` (``done``/``failed``:
    steps; ``folders_removed``: the folders the undone creates had made, removed once empty)."""
    root = index.root
    done: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for step in steps:
        if step.action in ("leave", "refuse"):
            continue
        try:
            change = _do(root, index.history_dir, step, index.config)
        except (VaultMemError, OSError) as exc:
            failed.append({**step.public(), "reason": str(exc)})
            continue
        if change is None:
            failed.append({**step.public(), "reason": "changed while undo ran; left alone"})
        else:
            changes.append(change)
            done.append(step.public())
    folders = _remove_made(root, [s for s in steps if s.action == "trash" and s.public() in done])
    warnings = []
    if changes:
        warning = journal.record(index.history_dir, UNDO_AGENT, "undo", changes, config=index.config)
        if warning:
            warnings.append(warning)
        warnings += _index(index, changes)
    commit = None
    if git_commit and changes:
        commit, warning = _commit(root, [c["fsrel"] for c in changes], agent, since, len(changes), index.config)
        if warning:
            warnings.append(warning)
    return {"done": done, "failed": failed, "warnings": warnings, "commit": commit, "folders_removed": folders}


def _do(root: Path, history_dir: Path, step: Step, config: Settings) -> dict[str, Any] | None:
    """Carry out one step; the journal change it made, or None when the file moved on meanwhile.
    Its paths are confined again here: a step is done only as a write tool could do it."""
    path = _note_target(root, step.fsrel)
    if step.trash is not None:
        _trash_target(root, step.trash)
    current = path.read_bytes() if path.exists() else None
    if (digest(current) if current is not None else None) != step.expected:
        return None
    info = {"path": step.path, "fsrel": step.fsrel, "title": step.title, "uid": step.uid, "trash": None}
    if step.action == "trash":
        trashed = move_to_trash(root, step.fsrel, config)
        return {**info, "before": current, "after": None, "trash": trashed}
    if step.action == "untrash" and step.trash is not None:
        if not move_back(root, step.trash, step.fsrel, config):
            return None
        return {**info, "before": None, "after": path.read_bytes()}
    assert step.before is not None
    data = journal.blob(history_dir, step.before)
    if data is None:
        raise NotFound("the journal no longer holds its earlier content")
    if current is None:
        return {**info, "before": None, "after": data} if create_at(path, data, within=root, config=config) else None
    atomic_write(path, data, within=root, config=config)
    return {**info, "before": current, "after": data}


def _index(index: VaultIndex, changes: list[dict[str, Any]]) -> list[str]:
    """Index the undone notes now (a running server's watcher would, too)."""
    if index.needs_build():
        return []
    notes, removed = [], []
    for change in changes:
        if change["after"] is None:
            removed.append(change["path"])
        else:
            notes.append((read_note(index.root, change["fsrel"], index.history, config=index.config), change["fsrel"]))
    try:
        index.apply(notes, removed, timeout=index.write_timeout)
    except (IndexBusy, OSError) as exc:
        return [f"the files are put back, but not indexed yet ({exc}); the next serve or index run catches up"]
    finally:
        index.close()
    return []


def _commit(root: Path, paths: list[str], agent: str, since: dt.datetime, count: int,
            config: Settings) -> tuple[str | None, str | None]:
    repo = Repo.find(root, config)
    if repo is None:
        return None, "not committed: the vault is not a git work tree"
    message = f"undo: {count} note(s) changed by {agent} since {iso(since)}"
    try:
        return commit_paths(repo, paths, message, agent_identity(UNDO_AGENT)), None
    except GitError as exc:
        return None, f"the notes are put back but not committed: {exc}"


# -- one change (the page for people: vault_mem/ui/) --------------------------------------

def change_id(entry: Entry) -> str:
    """A stable name for one journaled change, for a page to point at."""
    return digest(f"{entry.t!r}|{entry.agent}|{entry.tool}|{entry.fsrel}|{entry.after}".encode())[:20]


def find_change(index: VaultIndex, ident: str) -> Entry:
    """The journaled change named ``ident`` (``change_id``), or NotFound."""
    for entry in journal.entries(index.history_dir):
        if change_id(entry) == ident:
            return entry
    raise NotFound(f"no change {ident[:40]!r} in the journal (it keeps {index.config.journal_max_age_days} days)")


def plan_change(index: VaultIndex, entry: Entry) -> Step:
    """What undoing this one change would do, by the window undo's rules: the note goes back to
    what it was before the change only while it still is what the change left."""
    return _step(index.root, index.history_dir, journal.entries(index.history_dir), [entry])
