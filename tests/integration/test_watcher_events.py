"""The event sequences macOS (FSEvents) and Windows (ReadDirectoryChangesW) produce, replayed into
the watcher's real handler on real files.

Only inotify runs here, so each scenario changes the files first, with no observer looking,
and then hands the handler the events the other platform's watchdog emitter would have
queued for that change. The shapes come from watchdog 6-7's own emitters and tests:

FSEvents (``observers/fsevents.py``): paths are real paths (``/private/var/...`` for a vault
opened as ``/var/...``); a created or deleted item is followed by a modified event for its
folder, a rename by one for each folder; a folder rename within the watch is one
DirMovedEvent plus a synthetic move for everything under it (``generate_sub_moved_events``);
an item moved out of the watch (to the Trash) is a deleted event; events coalesce, so a
short-lived temp file can arrive as created, modified and deleted at once. TextEdit's safe
save (watchdog issue 538) moves the note aside to ``name.sb-...``, writes the new note and
deletes the moved one.

ReadDirectoryChangesW (``observers/read_directory_changes.py``): no modified events for
folders; a rename is one move (old and new name paired); a folder rename is a DirMovedEvent
plus synthetic sub-moves; a folder that appears brings synthetic created events for its
contents; a deletion is always a FileDeletedEvent, even for a folder, since the path is gone
when the event is read (watchdog issues 92, 279, 775), and a folder sent to the Recycle Bin
brings no event for the files inside it. Replacing a note (MoveFileEx with
REPLACE_EXISTING) reports the old note removed, then the rename.

Backslash separators and drive letters are checked with ``ntpath`` in tests/integration/test_portable.py
(``relative_to_root``); here the separator is this system's. After each replay the index
must equal the files, and before it the index must still be stale (so nothing but the
replayed events can have repaired it).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    generate_sub_created_events,
    generate_sub_moved_events,
)

from vault_mem import settings
from vault_mem.runtime.watcher import Watcher, _Handler
from vault_mem.search.api import VaultIndex, sync
from vault_mem.vault.paths import display_path
from vault_mem.vault.reader import file_etag
from vault_mem.vault.walk import walk_vault

Events = list[FileSystemEvent]
BASE = {
    "top.md": "# Top\n\nat the root\n",
    "inbox/note.md": "# Note\n\nfirst version\n",
    "inbox/other.md": "# Other\n\nstays\n",
    "projects/alpha/a1.md": "# A1\n\nalpha one\n",
    "projects/alpha/a2.md": "# A2\n\nalpha two\n",
    "projects/beta/b1.md": "# B1\n\nbeta one\n",
}


def disk_etags(root: Path) -> dict[str, str]:
    return {display_path(rel): file_etag((root / rel).read_bytes()) for rel in walk_vault(root).files}


def index_etags(index: VaultIndex) -> dict[str, str]:
    return {path: fp[2] for path, fp in index.fingerprints().items()}


class Replay:
    """A vault indexed at BASE, opened through ``opened`` (a symlink for the FSEvents cases), with a
    started Watcher whose periodic reconcile is far away; events are built under ``events_root``."""

    def __init__(self, tmp_path: Path, through_symlink: bool) -> None:
        real = tmp_path / "real-vault"
        for rel, text in BASE.items():
            (real / rel).parent.mkdir(parents=True, exist_ok=True)
            (real / rel).write_text(text, encoding="utf-8")
        self.opened = real
        if through_symlink:
            self.opened = tmp_path / "vault-link"
            self.opened.symlink_to(real, target_is_directory=True)
        self.events_root = os.path.realpath(self.opened) if through_symlink else str(self.opened)
        self.index = VaultIndex(self.opened, tmp_path / "index", config=settings.current())
        sync(self.index, procs=1)
        self.watcher = Watcher(self.index, reconcile_every=3600)
        self.handler = _Handler(self.watcher)

    def p(self, rel: str) -> str:
        """The absolute path the emitter would report for ``rel``."""
        return os.path.join(self.events_root, *rel.split("/"))

    def disk(self, rel: str) -> Path:
        return self.opened / rel

    def write(self, rel: str, text: str) -> None:
        path = self.disk(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def replay(self, events: Events) -> None:
        assert index_etags(self.index) != disk_etags(self.opened), "the change must leave the index stale"
        self.watcher.start()
        try:
            for event in events:
                self.handler.dispatch(event)
            assert self.watcher.wait_idle(timeout=60)
            assert index_etags(self.index) == disk_etags(self.opened)
        finally:
            self.watcher.stop()
            self.index.close()


# -- FSEvents (macOS) --------------------------------------------------------------------------


def fsevents_atomic_save(r: Replay) -> Events:
    r.write("inbox/note.md.tmp.4242", "# Note\n\nsecond version\n")
    os.replace(r.disk("inbox/note.md.tmp.4242"), r.disk("inbox/note.md"))
    tmp, note, folder = r.p("inbox/note.md.tmp.4242"), r.p("inbox/note.md"), r.p("inbox")
    return [FileCreatedEvent(tmp), DirModifiedEvent(folder), FileModifiedEvent(tmp),
            FileMovedEvent(tmp, note), DirModifiedEvent(folder), DirModifiedEvent(folder)]


def fsevents_textedit_safe_save(r: Replay) -> Events:
    aside = "inbox/note.md.sb-fc8ad3a6-66GHcO"
    os.replace(r.disk("inbox/note.md"), r.disk(aside))
    r.write("inbox/note.md", "# Note\n\nsaved by TextEdit\n")
    os.unlink(r.disk(aside))
    note, folder = r.p("inbox/note.md"), r.p("inbox")
    return [FileCreatedEvent(note), FileMovedEvent(note, r.p(aside)), DirModifiedEvent(folder),
            FileDeletedEvent(r.p(aside)), DirModifiedEvent(folder)]


def fsevents_rename(r: Replay) -> Events:
    os.rename(r.disk("inbox/note.md"), r.disk("projects/note renamed.md"))
    return [FileMovedEvent(r.p("inbox/note.md"), r.p("projects/note renamed.md")),
            DirModifiedEvent(r.p("inbox")), DirModifiedEvent(r.p("projects"))]


def fsevents_folder_move(r: Replay) -> Events:
    os.rename(r.disk("projects/alpha"), r.disk("inbox/alpha"))
    src, dst = r.p("projects/alpha"), r.p("inbox/alpha")
    return [DirMovedEvent(src, dst), DirModifiedEvent(r.p("projects")), DirModifiedEvent(r.p("inbox")),
            *generate_sub_moved_events(src, dst)]


def fsevents_folder_to_trash(r: Replay) -> Events:
    trash = Path(r.events_root).parent / "Trash"
    trash.mkdir()
    shutil.move(str(r.disk("projects/beta")), str(trash / "beta"))
    return [DirDeletedEvent(r.p("projects/beta")), DirModifiedEvent(r.p("projects"))]


def fsevents_burst(r: Replay) -> Events:
    events: Events = []
    for n in range(300):
        rel = f"inbox/burst/b{n:03}.md"
        r.write(rel, f"# Burst {n}\n\nitem {n}\n")
        events += [FileCreatedEvent(r.p(rel)), FileModifiedEvent(r.p(rel))]
    r.write("inbox/note.md", "# Note\n\nedited during the burst\n")
    # Coalesced: a temp file created, written and deleted within one latency window.
    short_lived = r.p("inbox/.~lock.note.md#")
    events += [DirCreatedEvent(r.p("inbox/burst")), DirModifiedEvent(r.p("inbox")),
               FileModifiedEvent(r.p("inbox/note.md")),
               FileCreatedEvent(short_lived), FileModifiedEvent(short_lived), FileDeletedEvent(short_lived)]
    return events


# -- ReadDirectoryChangesW (Windows) -----------------------------------------------------------


def windows_atomic_save(r: Replay) -> Events:
    r.write("inbox/note.md.tmp", "# Note\n\nsecond version\n")
    os.replace(r.disk("inbox/note.md.tmp"), r.disk("inbox/note.md"))
    tmp, note = r.p("inbox/note.md.tmp"), r.p("inbox/note.md")
    return [FileCreatedEvent(tmp), FileModifiedEvent(tmp), FileDeletedEvent(note), FileMovedEvent(tmp, note)]


def windows_replace_file_with_backup(r: Replay) -> Events:
    # ReplaceFileW, as Word and some editors save: note -> backup, temp -> note, backup deleted.
    r.write("inbox/~WRL0001.tmp", "# Note\n\nsaved through ReplaceFile\n")
    os.replace(r.disk("inbox/note.md"), r.disk("inbox/note.md.bak"))
    os.replace(r.disk("inbox/~WRL0001.tmp"), r.disk("inbox/note.md"))
    os.unlink(r.disk("inbox/note.md.bak"))
    note, tmp, bak = r.p("inbox/note.md"), r.p("inbox/~WRL0001.tmp"), r.p("inbox/note.md.bak")
    return [FileCreatedEvent(tmp), FileModifiedEvent(tmp), FileMovedEvent(note, bak),
            FileMovedEvent(tmp, note), FileDeletedEvent(bak)]


def windows_in_place_save(r: Replay) -> Events:
    r.write("inbox/note.md", "# Note\n\nwritten in place\n")
    return [FileModifiedEvent(r.p("inbox/note.md")), FileModifiedEvent(r.p("inbox/note.md"))]


def windows_rename(r: Replay) -> Events:
    os.rename(r.disk("inbox/note.md"), r.disk("inbox/renamed.md"))
    return [FileMovedEvent(r.p("inbox/note.md"), r.p("inbox/renamed.md"))]


def windows_folder_rename(r: Replay) -> Events:
    os.rename(r.disk("projects/alpha"), r.disk("projects/gamma"))
    src, dst = r.p("projects/alpha"), r.p("projects/gamma")
    return [DirMovedEvent(src, dst), *generate_sub_moved_events(src, dst)]


def windows_folder_to_recycle_bin(r: Replay) -> Events:
    shutil.rmtree(r.disk("projects/alpha"))  # to the Recycle Bin: gone from the vault in one move
    return [FileDeletedEvent(r.p("projects/alpha"))]  # a file event, and nothing for the notes inside


def windows_folder_deleted_file_by_file(r: Replay) -> Events:
    shutil.rmtree(r.disk("projects/beta"))
    return [FileDeletedEvent(r.p("projects/beta/b1.md")), FileDeletedEvent(r.p("projects/beta"))]


def windows_folder_pasted(r: Replay) -> Events:
    for n in range(3):
        r.write(f"pasted/deep/p{n}.md", f"# Pasted {n}\n")
    return [DirCreatedEvent(r.p("pasted")), *generate_sub_created_events(r.p("pasted"))]


def windows_burst(r: Replay) -> Events:
    events: Events = []
    for n in range(300):
        rel = f"projects/burst{n:03}.md"
        r.write(rel, f"# Burst {n}\n")
        events += [FileCreatedEvent(r.p(rel)), FileModifiedEvent(r.p(rel))]
    os.unlink(r.disk("top.md"))
    return [*events, FileDeletedEvent(r.p("top.md"))]


FSEVENTS: dict[str, Callable[[Replay], Events]] = {
    "atomic save": fsevents_atomic_save,
    "TextEdit safe save": fsevents_textedit_safe_save,
    "rename": fsevents_rename,
    "folder move": fsevents_folder_move,
    "folder to the Trash": fsevents_folder_to_trash,
    "burst": fsevents_burst,
}
WINDOWS: dict[str, Callable[[Replay], Events]] = {
    "atomic save": windows_atomic_save,
    "ReplaceFile with a backup": windows_replace_file_with_backup,
    "in-place save": windows_in_place_save,
    "rename": windows_rename,
    "folder rename": windows_folder_rename,
    "folder to the Recycle Bin": windows_folder_to_recycle_bin,
    "folder deleted file by file": windows_folder_deleted_file_by_file,
    "folder pasted": windows_folder_pasted,
    "burst": windows_burst,
}


@pytest.fixture
def replay_on(tmp_path: Path) -> Iterator[Callable[[bool], Replay]]:
    made: list[Replay] = []

    def make(through_symlink: bool) -> Replay:
        made.append(Replay(tmp_path, through_symlink))
        return made[-1]

    yield make
    for r in made:
        r.watcher.stop()
        r.index.close()


@pytest.mark.parametrize("scenario", sorted(FSEVENTS))
def test_fsevents_sequences_on_a_vault_opened_through_a_symlink_end_equal_to_the_files(
        replay_on: Callable[[bool], Replay], scenario: str) -> None:
    r = replay_on(True)
    r.replay(FSEVENTS[scenario](r))


@pytest.mark.parametrize("scenario", sorted(WINDOWS))
def test_read_directory_changes_sequences_end_equal_to_the_files(
        replay_on: Callable[[bool], Replay], scenario: str) -> None:
    r = replay_on(False)
    r.replay(WINDOWS[scenario](r))


def test_changes_whose_events_never_arrive_are_repaired_by_the_periodic_reconcile(tmp_path: Path) -> None:
    """The safety net: an overflowed queue (or an observer that lost its watch) reports nothing."""
    r = Replay(tmp_path, through_symlink=False)
    windows_folder_to_recycle_bin(r)
    fsevents_atomic_save(r)
    watcher = Watcher(r.index, reconcile_every=0.2)
    watcher.start()
    try:
        deadline = time.monotonic() + 60
        while index_etags(r.index) != disk_etags(r.opened):
            assert time.monotonic() < deadline, "the periodic reconcile did not repair the index"
            time.sleep(0.05)
    finally:
        watcher.stop()
        r.index.close()
