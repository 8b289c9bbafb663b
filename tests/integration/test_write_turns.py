"""Write tools of one process take turns per note (writes/tools.py): writes of one note one after
another, writes of different notes side by side; the small file locks beside the index queue
the threads of a process before the file (history/filelocks.py); and what the watcher and the
commit wait for is the file steps under way when they ask (tests/engine/test_file_steps.py)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import in_threads

from vault_mem import settings
from vault_mem.history import filelocks, journal
from vault_mem.mcp_server.app import Calls
from vault_mem.search.api import reconcile
from vault_mem.writes import tools

NOTES = {
    "a.md": "---\nid: a-1\ntitle: A\n---\nfirst of a\n",
    "b.md": "---\nid: b-1\ntitle: B\n---\nfirst of b\n",
}
WAIT = 30.0  # seconds: only a hang takes this long


@pytest.mark.parametrize("step", ["atomic_write", "journal_and_track"])
def test_a_write_of_another_note_lands_while_one_is_in_its_file_steps(make_vault, monkeypatch, step: str) -> None:
    """An edit of a.md held after its file write (``atomic_write``: before its submission to the
    index; ``journal_and_track``: after it, while its change is journaled) does not hold up an edit of
    another note (run one at a time, the second waited for the first; and the first to submit
    to a batch committed it, so a slow journal held up every write that joined its batch)."""
    others = {f"{c}.md": f"---\nid: {c}-1\ntitle: {c.upper()}\n---\nfirst of {c}\n" for c in "bcdefgh"}
    vault = make_vault({"a.md": NOTES["a.md"], **others})
    # Two notes share a turn now and then (one name in 64, by the run's string hashes): the other
    # note is the first that does not share a.md's.
    name = next(n for n in others if tools.turn_number(vault.root, n) != tools.turn_number(vault.root, "a.md"))
    other = name[0] + "-1"
    calls = Calls(vault)
    inside, release = threading.Event(), threading.Event()
    original = getattr(tools, step)

    def hold_a() -> None:
        inside.set()
        assert release.wait(WAIT), "the edit of a.md was never let go"

    def journal_and_track(view: Any, tool: str, agent: str, changes: list[dict[str, Any]]) -> list[str]:
        if changes[0]["fsrel"] == "a.md":
            hold_a()
        return original(view, tool, agent, changes)

    def atomic_write(path: Path, data: bytes, mode: int | None = None, within: Path | None = None, *,
                     config: Any) -> None:
        original(path, data, mode, within, config=config)
        if path.name == "a.md":
            hold_a()

    monkeypatch.setattr(tools, step, journal_and_track if step == "journal_and_track" else atomic_write)
    answers: dict[str, dict[str, Any]] = {}

    def edit(ref: str) -> None:
        answers[ref] = calls.answer("memory_edit", {"agent": "t", "ref": ref, "append": f"more of {ref}"}, None)

    held = threading.Thread(target=edit, args=("a-1",))
    held.start()
    try:
        assert inside.wait(WAIT)
        second = threading.Thread(target=edit, args=(other,))
        second.start()
        second.join(WAIT)
        assert not second.is_alive(), f"the edit of {name} waited for the edit of a.md"
        assert answers[other]["status"] == "ok" and "a-1" not in answers
    finally:
        release.set()
        held.join(WAIT)
    assert answers["a-1"]["status"] == "ok"
    assert "more of a-1" in (vault.root / "a.md").read_text() and f"more of {other}" in (vault.root / name).read_text()


def test_edits_of_one_note_from_many_threads_lose_nothing(make_vault) -> None:
    """Appends to one note from eight threads at once: every paragraph in the file, one journal
    entry each (in the order of the writes), and the index holds the file's last version."""
    vault = make_vault(NOTES)
    calls = Calls(vault)
    count = iter(range(1000))
    lock = threading.Lock()
    failures: list[dict[str, Any]] = []

    def appends() -> None:
        for _ in range(5):
            with lock:
                n = next(count)
            answer = calls.answer("memory_edit", {"agent": "t", "ref": "a-1", "append": f"paragraph {n}"}, None)
            if answer["status"] != "ok":
                failures.append(answer)

    in_threads(appends, 8, timeout=120)
    assert failures == []
    text = (vault.root / "a.md").read_text()
    assert all(f"paragraph {n}\n" in text for n in range(40))
    entries = [e for e in journal.entries(vault.index.history_dir) if e.path == "a.md"]
    assert len(entries) == 40
    # In the order of the writes: each one's "before" is what the one before it left.
    assert all(later.before == earlier.after for earlier, later in itertools.pairwise(entries))
    found = calls.answer("memory_read", {"ref": "a-1"}, None)
    assert found["status"] == "ok" and all(f"paragraph {n}" in found["body"] for n in range(40))


def test_new_notes_from_many_threads_each_get_a_file_of_their_own(make_vault) -> None:
    """Writes with one title from six threads at once: six files (suffixed), each indexed."""
    vault = make_vault(NOTES)
    calls = Calls(vault)
    uids: list[str] = []

    def write() -> None:
        answer = calls.answer("memory_write", {"agent": "t", "title": "Same", "content": "same title"}, None)
        assert answer["status"] == "ok", answer
        uids.append(answer["uid"])

    in_threads(write, 6, timeout=120)
    assert len({(vault.root / f).name for f in vault.root.glob("Same*.md")}) == 6
    for uid in uids:
        assert calls.answer("memory_read", {"ref": uid}, None)["status"] == "ok"


def test_a_file_lock_lets_one_thread_in_at_a_time(tmp_path: Path) -> None:
    inside = [0]
    most = [0]
    guard = threading.Lock()

    def take() -> None:
        for _ in range(20):
            with filelocks.locked(tmp_path / "lock", settings.current().file_lock_poll):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0005)  # long enough for another thread to try
                with guard:
                    inside[0] -= 1

    in_threads(take, 6)
    assert most[0] == 1


def test_a_file_lock_waits_for_another_process(tmp_path: Path) -> None:
    """Another process holding the lock file keeps this process's threads out until it lets go."""
    lock, mark = tmp_path / "lock", tmp_path / "released"
    with subprocess.Popen([sys.executable, "-c", (
        "import sys, time, pathlib\nfrom filelock import FileLock\n"
        f"with FileLock({str(lock)!r}):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(0.3)\n"
        f"    pathlib.Path({str(mark)!r}).write_text('x')\n")], stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with filelocks.locked(lock, settings.current().file_lock_poll):
            assert mark.exists()
        holder.wait(WAIT)


def test_appends_through_a_symlinked_folder_and_its_target_take_one_turn(make_vault) -> None:
    """A folder linked inside the vault shows its notes twice (two paths, one file): the turn
    follows the file, so appends through both paths at once keep every paragraph."""
    vault = make_vault({"projects/x.md": "---\ntitle: X\n---\nfirst\n"})
    try:
        os.symlink("projects", vault.root / "alias", target_is_directory=True)
    except OSError as exc:  # Windows without the right to make symlinks
        pytest.skip(f"no symlinks here: {exc}")
    reconcile(vault.index)
    calls = Calls(vault)
    failures: list[dict[str, Any]] = []

    def appends(ref: str) -> None:
        for n in range(5):
            answer = calls.answer("memory_edit", {"agent": "t", "ref": ref, "append": f"{ref} {n}"}, None)
            if answer["status"] != "ok":
                failures.append(answer)

    threads = [threading.Thread(target=appends, args=(ref,)) for ref in ("projects/x", "alias/x")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert failures == []
    text = (vault.root / "projects/x.md").read_text()
    assert all(f"{ref} {n}\n" in text for ref in ("projects/x", "alias/x") for n in range(5))


def test_an_edit_aimed_at_a_deleted_note_leaves_the_new_note_of_its_name_alone(make_vault, monkeypatch) -> None:
    """While an edit waits for its note's turn, the note is deleted and another takes its name:
    the edit answers not_found and changes nothing (it resolved the old note before it waited)."""
    vault = make_vault({"n.md": "---\nid: old-1\ntitle: N\n---\nold\n"})
    calls = Calls(vault)
    take_turn = tools.WriteTurns.take
    replaced = []

    def replaced_meanwhile(turns: tools.WriteTurns, root: Path, rel: str) -> None:
        if rel == "n.md" and not replaced:
            replaced.append(rel)
            (vault.root / "n.md").write_text("---\nid: new-1\ntitle: N\n---\nnew\n")
        take_turn(turns, root, rel)

    monkeypatch.setattr(tools.WriteTurns, "take", replaced_meanwhile)
    answer = calls.answer("memory_edit", {"agent": "t", "ref": "old-1", "append": "more"}, None)
    assert replaced and answer["status"] == "not_found", answer
    assert (vault.root / "n.md").read_text() == "---\nid: new-1\ntitle: N\n---\nnew\n"


def test_two_writes_into_one_new_folder_spelled_two_ways_make_one_folder(make_vault, monkeypatch) -> None:
    """A new note's folder is looked up and made under the folder's turn: a second write into
    "projects" while the first is making "Projects" files into the folder the first made."""
    vault = make_vault(NOTES)
    calls = Calls(vault)
    spelling = tools.existing_spelling
    first_inside, second_done = threading.Event(), threading.Event()

    def first_waits(root: Path, domain: str) -> str:
        found = spelling(root, domain)  # no folder of that name yet: "Projects" it will be
        if threading.current_thread().name == "first":
            first_inside.set()
            second_done.wait(1.0)  # without the folder's turn the second write is done by now
        return found

    monkeypatch.setattr(tools, "existing_spelling", first_waits)
    answers: dict[str, dict[str, Any]] = {}

    def write(name: str, domain: str) -> None:
        answers[name] = calls.answer("memory_write", {"agent": "t", "title": name, "content": "x",
                                                      "domain": domain}, None)
        if name == "second":
            second_done.set()

    first = threading.Thread(target=write, args=("first", "Projects"), name="first")
    first.start()
    assert first_inside.wait(WAIT)
    second = threading.Thread(target=write, args=("second", "projects"), name="second")
    second.start()
    first.join(WAIT)
    second.join(WAIT)
    assert answers["first"]["status"] == answers["second"]["status"] == "ok"
    folders = [p.name for p in vault.root.iterdir() if p.is_dir() and p.name.lower() == "projects"]
    assert len(folders) == 1, folders
