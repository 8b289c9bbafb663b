"""Live sync (docs/index-and-sync.md): a real watchdog observer on real files keeps the index equal to the files.

Every test waits on a condition with a deadline (``eventually``), never on a bare sleep: the
watcher debounces events and applies them on its own thread.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import eventually, has_path, stored, write_notes

from vault_mem import settings
from vault_mem.reads.list_by_domain import list_by_domain
from vault_mem.runtime import watcher as watcher_module
from vault_mem.runtime.observer import EVENTS_LOST
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import VaultIndex, reconcile, sync
from vault_mem.served.context import Vault, view_of
from vault_mem.vault.paths import display_path
from vault_mem.vault.reader import file_etag, read_note
from vault_mem.vault.walk import walk_vault

pytestmark = pytest.mark.anyio


def disk_etags(root: Path) -> dict[str, str]:
    """``{path: etag}`` of every memory file, read fresh from disk."""
    return {display_path(rel): file_etag((root / rel).read_bytes()) for rel in walk_vault(root).files}


def index_etags(index: VaultIndex) -> dict[str, str]:
    return {path: fp[2] for path, fp in index.fingerprints().items()}


def in_sync(index: VaultIndex) -> bool:
    return index_etags(index) == disk_etags(index.root)


def wait_in_sync(watcher: Watcher, timeout: float = 15.0) -> None:
    """Wait until the watcher is idle and the index says exactly what the files say."""
    eventually(lambda: watcher.wait_idle(timeout) and in_sync(watcher.index), timeout, "index equal to the files")


def uids(index: VaultIndex) -> dict[str, str]:
    return {path: rec["uid"] for path, rec in index.records().items()}


def note(title: str, body: str, uid: str | None = None) -> str:
    head = f"id: {uid}\n" if uid else ""
    return f"---\n{head}title: {title}\n---\n{body}\n"


def domain_paths(vault: Vault, domain: str) -> list[str]:
    with view_of(vault) as view:
        answer = list_by_domain(view, {"domain": domain, "limit": 200, "status": "all"})
    return sorted(r["path"] for r in answer["results"])


@pytest.fixture
def live(make_vault: Callable[..., Vault]) -> Iterator[Callable[..., tuple[Vault, Watcher]]]:
    """``live(notes, **watcher_options)``: an indexed vault with a running Watcher (stopped after)."""
    started: list[Watcher] = []

    def start(notes: dict[str, str], **options: Any) -> tuple[Vault, Watcher]:
        vault = make_vault(notes)
        watcher = Watcher(vault.index, **options)
        watcher.start()
        started.append(watcher)
        return vault, watcher

    yield start
    for watcher in started:
        watcher.stop()


BASE = {
    "a/one.md": note("One", "first body", uid="u1"),
    "a/deep/two.md": note("Two", "second body", uid="u2"),
    "b/three.md": note("Three", "third body"),
}


# -- single files ----------------------------------------------------------------------------


def test_create_modify_delete(live) -> None:
    vault, w = live(BASE)
    root = vault.root
    (root / "a/new.md").write_text(note("New", "fresh"))
    wait_in_sync(w)
    assert "a/new.md" in index_etags(vault.index)
    (root / "a/new.md").write_text(note("New", "fresh, edited"))
    wait_in_sync(w)
    assert stored(vault.index, "a/new.md")["head"] == "fresh, edited\n"  # type: ignore[index]
    (root / "a/new.md").unlink()
    wait_in_sync(w)
    assert not has_path(vault.index, "a/new.md")


def test_atomic_save_arrives_as_a_move_only(live) -> None:
    vault, w = live(BASE)
    target = vault.root / "a/one.md"
    for temp_name in ("one.md.tmp", ".one.md.swp", ".~one.md"):  # visible and hidden temp names
        temp = target.parent / temp_name
        temp.write_text(note("One", f"saved through {temp_name}", uid="u1"))
        os.replace(temp, target)
        wait_in_sync(w)
        assert stored(vault.index, "a/one.md")["head"] == f"saved through {temp_name}\n"  # type: ignore[index]
    assert uids(vault.index)["a/one.md"] == "u1"
    assert not any(p.endswith((".tmp", ".swp")) for p in index_etags(vault.index))


def test_vim_style_save(live) -> None:
    vault, w = live(BASE)
    folder = vault.root / "a"
    probe = folder / "4913"  # vim checks it can create files in the folder
    probe.write_bytes(b"")
    probe.unlink()
    os.rename(folder / "one.md", folder / "one.md~")
    (folder / "one.md").write_text(note("One", "written by vim", uid="u1"))
    (folder / "one.md~").unlink()
    wait_in_sync(w)
    assert stored(vault.index, "a/one.md")["head"] == "written by vim\n"  # type: ignore[index]
    assert uids(vault.index)["a/one.md"] == "u1"


async def test_rename_of_a_note_with_id_keeps_its_uid(live, mcp_session) -> None:
    vault, w = live(BASE)
    os.rename(vault.root / "a/one.md", vault.root / "b/renamed.md")
    wait_in_sync(w)
    assert uids(vault.index)["b/renamed.md"] == "u1" and not has_path(vault.index, "a/one.md")
    async with mcp_session(vault) as c:
        answer = await c.call("memory_read", ref="u1")
        assert answer["status"] == "ok" and answer["path"] == "b/renamed.md"


async def test_rename_of_a_note_without_id_changes_uid_but_keeps_its_etag(live, mcp_session) -> None:
    """Without ``id`` the uid is derived from the path, so a rename makes a new uid. The etag (a hash
    of the bytes) does not change: a client that kept it can tell the renamed note holds the same
    text, and an edit guarded by that etag still applies at the new path."""
    vault, w = live(BASE)
    before = stored(vault.index, "b/three.md")
    assert before is not None
    os.rename(vault.root / "b/three.md", vault.root / "a/three again.md")
    wait_in_sync(w)
    after = stored(vault.index, "a/three again.md")
    assert after is not None and not has_path(vault.index, "b/three.md")
    assert after["uid"] != before["uid"] and after["etag"] == before["etag"]
    async with mcp_session(vault) as c:
        gone = await c.call("memory_read", ref=before["uid"])
        assert gone["status"] == "not_found"
        edited = await c.call("memory_edit", agent="test", ref=after["uid"], if_etag=before["etag"],
                              append="Still the same note.")
        assert edited["status"] == "ok" and edited["path"] == "a/three again.md"


# -- folders ---------------------------------------------------------------------------------


def test_folder_rename_re_domains_every_note(live) -> None:
    vault, w = live(BASE)
    os.rename(vault.root / "a", vault.root / "alpha")
    wait_in_sync(w)
    assert domain_paths(vault, "alpha") == ["alpha/deep/two.md", "alpha/one.md"]
    assert domain_paths(vault, "a") == []
    assert uids(vault.index)["alpha/deep/two.md"] == "u2"
    # the renamed top-level folder is watched under its new name
    (vault.root / "alpha/deep/later.md").write_text(note("Later", "after the rename"))
    wait_in_sync(w)
    assert domain_paths(vault, "alpha/deep") == ["alpha/deep/later.md", "alpha/deep/two.md"]


def test_nested_folder_rename(live) -> None:
    vault, w = live(BASE)
    os.rename(vault.root / "a/deep", vault.root / "a/shallow")
    wait_in_sync(w)
    assert domain_paths(vault, "a/shallow") == ["a/shallow/two.md"]
    assert domain_paths(vault, "a/deep") == []


def test_folder_moved_into_another_folder(live) -> None:
    vault, w = live(BASE)
    os.rename(vault.root / "a", vault.root / "b/a")  # a top-level folder into another one
    wait_in_sync(w)
    assert domain_paths(vault, "b/a") == ["b/a/deep/two.md", "b/a/one.md"]
    assert domain_paths(vault, "b") == ["b/a/deep/two.md", "b/a/one.md", "b/three.md"]
    os.rename(vault.root / "b/a/deep", vault.root / "deep")  # and a nested one out to the top
    wait_in_sync(w)
    assert domain_paths(vault, "deep") == ["deep/two.md"]
    # both moved folders keep being followed
    (vault.root / "b/a/after.md").write_text("after\n")
    (vault.root / "deep/after.md").write_text("after\n")
    wait_in_sync(w)
    assert {"b/a/after.md", "deep/after.md"} <= set(index_etags(vault.index))


def test_saves_in_a_folder_moved_deeper_with_its_subfolder_are_heard(live) -> None:
    """A folder moved inside its top-level folder, into folders made just before, with a folder in
    it: watchdog's inotify watch dropped the subfolder's watch at its new place, and a save there
    later was never heard (found by test_live_state_machine)."""
    vault, w = live({"c/a/a/start.md": note("Start", "first")})
    root = vault.root
    (root / "c/d/e").mkdir(parents=True)
    os.rename(root / "c/a", root / "c/d/e/z z")
    wait_in_sync(w)
    assert set(index_etags(vault.index)) == {"c/d/e/z z/a/start.md"}
    target = root / "c/d/e/z z/a/start.md"
    temp = target.parent / ".start.md.tmp"
    temp.write_text(note("Start", "saved after the move"))
    os.replace(temp, target)
    wait_in_sync(w)
    (root / "c/d/e/z z/a/new.md").write_text(note("New", "made after the move"))
    wait_in_sync(w)
    assert set(index_etags(vault.index)) == {"c/d/e/z z/a/start.md", "c/d/e/z z/a/new.md"}


def test_folder_deleted(live) -> None:
    vault, w = live(BASE)
    shutil.rmtree(vault.root / "a")
    wait_in_sync(w)
    assert sorted(index_etags(vault.index)) == ["b/three.md"]


def test_new_folder_full_of_notes_moved_in(live, tmp_path: Path) -> None:
    vault, w = live(BASE)
    outside = write_notes(tmp_path / "staging", {f"sub{i % 3}/n{i}.md": note(f"N{i}", f"b{i}") for i in range(60)})
    shutil.move(str(outside), vault.root / "b/imported")  # arrives as one folder, no file events inside
    wait_in_sync(w)
    assert len(domain_paths(vault, "b/imported")) == 60


def test_top_level_folder_created_after_start_is_watched(live) -> None:
    vault, w = live(BASE)
    (vault.root / "later/inner").mkdir(parents=True)
    (vault.root / "later/inner/x.md").write_text("x\n")
    wait_in_sync(w)
    eventually(lambda: "later" in w._watched_tops, what="the new folder watched")
    (vault.root / "later/inner/y.md").write_text("y\n")  # seen through the new watch
    wait_in_sync(w)
    assert domain_paths(vault, "later") == ["later/inner/x.md", "later/inner/y.md"]


def test_burst_of_2000_files_like_a_git_checkout(live) -> None:
    vault, w = live(BASE)
    for i in range(2000):
        path = vault.root / f"c{i % 10}/d{i % 7}/n{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(f"Burst {i}", f"burst body {i}", uid=f"burst-{i}"))
    wait_in_sync(w, timeout=60)
    assert len(index_etags(vault.index)) == 2003


# -- what is never a memory ------------------------------------------------------------------


def test_hidden_folders_are_never_watched_nor_indexed(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {"a/one.md": note("One", "x"), ".git/HEAD": "ref\n",
                                        ".obsidian/app.json": "{}"})
    index = VaultIndex(root, config=settings.current())  # the index folder inside the vault: .vault-mem
    sync(index, procs=1)
    assert index.dir == root / ".vault-mem"
    w = Watcher(index)
    w.start()
    try:
        assert set(w._watched_tops) == {"a"}
        for rel in (".git/notes.md", ".obsidian/plugin.md", ".vault-mem/x.md", ".trash/old.md", "a/.hidden/h.md",
                    ".top.md"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("hidden\n")
        (root / "a/two.md").write_text("visible\n")  # a marker: once it is in, the hidden events were seen
        wait_in_sync(w)
        assert sorted(index_etags(index)) == ["a/one.md", "a/two.md"]
        (root / ".hidden-top").mkdir()  # a hidden top-level folder created later is not watched either
        (root / ".hidden-top/n.md").write_text("n\n")
        (root / "a/three.md").write_text("marker\n")
        wait_in_sync(w)
        assert set(w._watched_tops) == {"a"} and ".hidden-top/n.md" not in index_etags(index)
    finally:
        w.stop()


def test_gitignored_files_are_not_indexed(live) -> None:
    vault, w = live(BASE | {".gitignore": "drafts/\n*.tmp.md\n"})
    (vault.root / "drafts").mkdir()
    (vault.root / "drafts/d.md").write_text("draft\n")
    (vault.root / "a/x.tmp.md").write_text("temp\n")
    (vault.root / "a/kept.md").write_text("kept\n")
    wait_in_sync(w)
    assert "a/kept.md" in index_etags(vault.index)
    assert "drafts/d.md" not in index_etags(vault.index) and "a/x.tmp.md" not in index_etags(vault.index)


def test_half_written_file_ends_complete(live) -> None:
    vault, w = live(BASE)
    path = vault.root / "a/slow.md"
    full = note("Slow", "part one. " * 50 + "THE END")
    with path.open("w", encoding="utf-8") as handle:
        handle.write(full[: len(full) // 2])
        handle.flush()
        eventually(lambda: has_path(vault.index, "a/slow.md"), what="the half file indexed")
        handle.write(full[len(full) // 2:])
    wait_in_sync(w)
    assert stored(vault.index, "a/slow.md")["etag"] == file_etag(full.encode())  # type: ignore[index]


# -- the safety nets -------------------------------------------------------------------------


def test_periodic_reconcile_repairs_missed_events(live) -> None:
    """A kernel queue overflow loses events silently: simulated by dropping the watch of a folder."""
    vault, w = live(BASE, reconcile_every=0.5)
    w._observer.unschedule(w._watched_tops.pop("a"))
    (vault.root / "a/unseen.md").write_text("no event for this one\n")
    (vault.root / "a/deep/two.md").write_text(note("Two", "changed unseen", uid="u2"))
    wait_in_sync(w)
    assert stored(vault.index, "a/deep/two.md")["head"] == "changed unseen\n"  # type: ignore[index]
    assert has_path(vault.index, "a/unseen.md")
    assert w.swept == 2, "no event reached the watcher: the periodic check found both changes"


def _unheard_append(vault: Vault, rel: str, text: str, outside: Path) -> None:
    """Append to a note so that no watch of the vault hears it, as when the kernel drops the event:
    through a hard link outside the vault (inotify reports a change to the folder it was made through)."""
    os.link(vault.root / rel, outside)
    with open(outside, "a", encoding="utf-8") as f:
        f.write(text)
    outside.unlink()


def _overflow(w: Watcher) -> None:
    """What the kernel queues when its inotify queue overflowed (wd -1, IN_Q_OVERFLOW), handed to the
    real observer's reader as it would have read it."""
    from watchdog.observers.inotify_c import InotifyConstants, InotifyEvent

    w._observer._inotify_fd.handle_event(InotifyEvent(-1, InotifyConstants.IN_Q_OVERFLOW, 0, b""))


needs_lost_events = pytest.mark.skipif(
    not (watcher_module.INOTIFY and EVENTS_LOST), reason="injects an inotify overflow (watchdog 7 reports it)")


@needs_lost_events
def test_an_overflow_of_the_kernel_queue_checks_the_vault_at_once(live, tmp_path: Path, caplog) -> None:
    """An overflow drops events and watchdog says so with one event per watch: the watcher checks the
    whole vault at once (not at the next periodic check, a minute later) and says so in one line."""
    vault, w = live(BASE)  # the periodic check is a minute away: it is not what finds the change
    _unheard_append(vault, "a/deep/two.md", "appended unheard\n", tmp_path / "link.md")
    (vault.root / "b/after.md").write_text("heard after the append\n")  # queued after anything it made
    eventually(lambda: has_path(vault.index, "b/after.md"), what="the save made after the append")
    assert w.wait_idle(30)
    assert "appended unheard" not in stored(vault.index, "a/deep/two.md")["head"]  # type: ignore[index]
    with caplog.at_level("WARNING", logger="vault_mem.watch"):
        _overflow(w)
        wait_in_sync(w)
    assert "appended unheard" in stored(vault.index, "a/deep/two.md")["head"]  # type: ignore[index]
    assert w.swept >= 1 and w.checks >= 1
    lost = [r for r in caplog.records if r.name == "vault_mem.watch" and "dropped file events" in r.message]
    assert len(lost) == 1, "one overflow reaches every watch (the root's and each folder's): one line"


@needs_lost_events
def test_events_lost_while_the_check_runs_bring_another_check(tmp_path: Path, make_vault) -> None:
    """The check may already have passed the files whose events an overflow dropped while it ran:
    another check follows it."""
    vault = make_vault(BASE)
    walking, go_on = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        if not go_on.is_set():
            walking.set()
            assert go_on.wait(30)

    w = Watcher(vault.index, pace=pace)
    w.start()
    try:
        _overflow(w)
        assert walking.wait(30), "the check after the first overflow started"
        _overflow(w)  # while the first check is under way
        _unheard_append(vault, "a/one.md", "appended during the check\n", tmp_path / "link.md")
        go_on.set()
        eventually(lambda: w.checks >= 2 and w.wait_idle(0.0), timeout=30, what="a second check")
        wait_in_sync(w)
        assert "appended during the check" in stored(vault.index, "a/one.md")["head"]  # type: ignore[index]
    finally:
        go_on.set()
        w.stop()


@pytest.mark.parametrize("which", ["observer", "kernel queue reader"])
def test_dead_observer_is_restarted_and_reconciled(live, which: str) -> None:
    """The observer thread dies, or only the thread reading inotify (the observer looks alive but is deaf)."""
    vault, w = live(BASE, reconcile_every=0.5)
    dead = w._observer
    thread = dead if which == "observer" else dead._inotify_fd
    thread.stop()
    thread.join(timeout=5)
    (vault.root / "b/while-dead.md").write_text("written while nothing watched\n")
    wait_in_sync(w)
    assert w.swept >= 1, "nothing watched: the periodic check found the change"
    eventually(lambda: w._observer is not dead and w._observer.is_alive(), what="a new observer")
    (vault.root / "b/three.md").unlink()  # the new observer sees events again
    wait_in_sync(w)
    assert w.flushes > 0
    assert not has_path(vault.index, "b/three.md")


def test_changes_while_no_watcher_runs_are_found_by_the_startup_reconcile(make_vault) -> None:
    vault = make_vault(BASE)
    root = vault.root
    w = Watcher(vault.index)
    w.start()
    w.stop()
    (root / "a/one.md").write_text(note("One", "edited offline", uid="u1"))
    os.rename(root / "b", root / "c")
    (root / "a/deep/two.md").unlink()
    (root / "z.md").write_text("new at the root\n")
    assert not in_sync(vault.index)
    report = reconcile(vault.index)
    assert (report.added, report.updated, report.removed) == (2, 1, 2)
    assert in_sync(vault.index)


def test_a_change_another_process_indexed_is_not_indexed_twice(live) -> None:
    """Another process on the vault indexed a file before this watcher's flush (as
    ``unless_committed``: not one of this process's own saves); the watcher, which hears the same
    event, has it checked under the writer lock, finds the etag already there and writes nothing."""
    vault, w = live(BASE)
    (vault.root / "a/one.md").write_text(note("One", "edited", uid="u1"))
    wait_in_sync(w)
    indexed = w.indexed
    w.pause()  # the watcher hears the save but cannot apply it before the other commit
    try:
        (vault.root / "a/one.md").write_text(note("One", "edited again", uid="u1"))
        vault.index.apply([(read_note(vault.root, "a/one.md",
            config=settings.current()), "a/one.md")], [], unless_committed=True)
    finally:
        w.resume()
    wait_in_sync(w)
    assert w.flushes > 0 and w.indexed == indexed, "the watcher re-indexed a note that was already current"


def test_files_that_are_not_notes_need_no_look_at_the_index(live) -> None:
    """A write's temp file, an editor's swap file: the watcher flushes them without opening the
    index (a look renews its searcher, after every commit of a busy server)."""
    vault, w = live(BASE)
    wait_in_sync(w)
    looked: list[object] = []
    fingerprints = vault.index.fingerprints
    vault.index.fingerprints = lambda paths=None: looked.append(paths) or fingerprints(paths)  # type: ignore[method-assign]
    flushes = w.flushes
    (vault.root / "a/.one.md.1234.tmp").write_text("a temp file\n")
    (vault.root / "a/.one.md.1234.tmp").unlink()
    (vault.root / "b/notes.txt").write_text("not a note\n")
    eventually(lambda: w.flushes > flushes, 15.0, "a flush of the events")
    assert looked == []
    (vault.root / "b/new.md").write_text("a note\n")
    wait_in_sync(w)
    assert looked and has_path(vault.index, "b/new.md")


def test_a_save_heard_before_its_submission_is_left_to_its_write_tool(live, monkeypatch, tuned) -> None:
    """Under load a write tool can be slow between its file change and its submission: the
    watcher waits for those file steps, then finds the save submitted and indexes nothing."""
    tuned(watch_steps_wait=120.0)  # a slow machine: no give-up here
    vault, w = live(BASE)
    wait_in_sync(w)
    indexed, steps = w.indexed, vault.index.file_steps
    steps.begin()  # what a write tool does before it changes a file (writes/tools.py)
    try:
        (vault.root / "a/new.md").write_text(note("New", "saved by a tool", uid="n1"))
        eventually(lambda: steps.waiting, 60, "the watcher heard the save and waits for the tool's steps")
        assert not has_path(vault.index, "a/new.md")
        vault.index.commit_batch(vault.index.submit([(read_note(vault.root, "a/new.md",
            config=settings.current()), "a/new.md")], []))
    finally:
        steps.end()
    wait_in_sync(w)
    assert has_path(vault.index, "a/new.md") and w.indexed == indexed


def test_top_level_folder_moved_away_and_recreated_at_once_is_watched_anew(live) -> None:
    """The watch of a moved folder follows its inode; a new folder under the old name needs its own."""
    vault, w = live(BASE)
    (vault.root / "c").mkdir()
    (vault.root / "c/x.md").write_text("x\n")
    wait_in_sync(w)
    os.rename(vault.root / "c", vault.root / "a/c2")
    (vault.root / "c").mkdir()
    (vault.root / "c/y.md").write_text("y\n")
    wait_in_sync(w)
    assert {"a/c2/x.md", "c/y.md"} <= set(index_etags(vault.index))
    (vault.root / "c/y.md").unlink()  # only the watch of the new folder can see this
    (vault.root / "c/z.md").write_text("z\n")
    wait_in_sync(w)
    assert not has_path(vault.index, "c/y.md") and has_path(vault.index, "c/z.md")


def test_two_watchers_on_one_index_index_each_change_once(make_vault) -> None:
    """Two processes on one vault both see every event; whichever takes the writer lock first
    indexes a change, the other finds it already there (checked under the lock) and skips it.
    Two VaultIndex objects on one folder lock each other out as two processes do (flock)."""
    vault = make_vault(BASE)
    first, second = vault.index, VaultIndex(vault.root, vault.index.dir, config=settings.current())
    watchers = [Watcher(first), Watcher(second)]
    for w in watchers:
        w.start()
    try:
        for i in range(50):
            temp = vault.root / f"b/.n{i}.tmp"
            temp.write_text(note(f"N{i}", f"body {i}"))
            os.replace(temp, vault.root / f"b/n{i}.md")  # one complete file per event
        for w in watchers:
            wait_in_sync(w)
        assert in_sync(second)
        assert watchers[0].indexed + watchers[1].indexed == 50, [w.indexed for w in watchers]
    finally:
        for w in watchers:
            w.stop()
        second.close()


def test_the_servers_own_reads_reach_no_handler(tmp_path: Path) -> None:
    """The watch asks only for changes: opening and reading a note (what every excerpt and
    memory_read does) reports nothing, so watchdog's threads do not wake for it. The reads come
    before a write in the kernel's queue, so once the write is seen nothing of them can follow."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    from vault_mem.runtime.observer import changes_to_watch

    (tmp_path / "read.md").write_text("# Read\n\nonly read\n", encoding="utf-8")
    seen: list[tuple[str, str]] = []

    class Recorder(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            seen.append((event.event_type, os.path.basename(os.fsdecode(event.src_path))))

    observer = Observer()
    observer.schedule(Recorder(), str(tmp_path), recursive=True, event_filter=changes_to_watch())
    observer.start()
    try:
        for _ in range(5):
            (tmp_path / "read.md").read_bytes()
        (tmp_path / "written.md").write_text("# Written\n", encoding="utf-8")
        eventually(lambda: any(name == "written.md" for _, name in seen), timeout=15)
    finally:
        observer.stop()
        observer.join(timeout=10)
    assert [event for event in seen if event[1] == "read.md"] == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify reports a close; other observers do not")
def test_with_inotify_a_save_is_reported_by_its_close_not_its_writes(tmp_path: Path) -> None:
    """On Linux the watch leaves modified events out (runtime/observer.py): an atomic save is its
    temp file's create and close and the rename, and an edit in place (an editor that rewrites
    the file it opened) still reaches the handler, as its close."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    from vault_mem.runtime.observer import changes_to_watch
    from vault_mem.vault.writer import atomic_write

    (tmp_path / "folder").mkdir()
    note = tmp_path / "folder" / "note.md"
    note.write_text("# Note\n\nfirst\n", encoding="utf-8")
    seen: list[tuple[str, bool, str]] = []

    class Recorder(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            seen.append((event.event_type, event.is_directory, os.path.basename(os.fsdecode(event.src_path))))

    observer = Observer()
    observer.schedule(Recorder(), str(tmp_path), recursive=True, event_filter=changes_to_watch())
    observer.start()
    try:
        atomic_write(note, b"# Note\n\nsecond\n", config=settings.current())
        eventually(lambda: any(kind == "moved" for kind, _, _ in seen), timeout=15, what="the rename")
        with open(note, "r+b") as f:  # in place: no create, no rename
            f.seek(0, os.SEEK_END)
            f.write(b"third\n")
        eventually(lambda: ("closed", False, "note.md") in seen, timeout=15, what="the edit's close")
    finally:
        observer.stop()
        observer.join(timeout=10)
    assert not [event for event in seen if event[0] == "modified"], seen


# -- a failed commit (issue 58) ---------------------------------------------------------------


def many_notes(count: int) -> dict[str, str]:
    return {f"f{i % 4}/n{i}.md": note(f"Note {i}", f"body {i}") for i in range(count)}
