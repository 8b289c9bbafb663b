"""Write tools of one process take turns per note (writes/tools.py): writes of one note one after
another, writes of different notes side by side; the small file locks beside the index queue
the threads of a process before the file (index/filelocks.py); and what the watcher and the
commit wait for is the file steps under way when they ask (index/commits.py ``Written``)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from conftest import in_threads

from vault_mem.index import filelocks, journal
from vault_mem.index.commits import Written
from vault_mem.mcp_server.app import Calls
from vault_mem.writes import tools

NOTES = {
    "a.md": "---\nid: a-1\ntitle: A\n---\nfirst of a\n",
    "b.md": "---\nid: b-1\ntitle: B\n---\nfirst of b\n",
}
WAIT = 30.0  # seconds: only a hang takes this long


def test_a_write_of_another_note_lands_while_one_is_in_its_file_steps(make_vault, monkeypatch) -> None:
    """An edit of a.md held between its file write and its submission does not hold up an edit
    of b.md (run one at a time, the second waited for the first)."""
    vault = make_vault(NOTES)
    calls = Calls(vault)
    inside, release = threading.Event(), threading.Event()
    landed = tools.landed

    def slow_for_a(view: Any, tool: str, agent: str, changes: list[dict[str, Any]]) -> list[str]:
        if changes[0]["fsrel"] == "a.md":
            inside.set()
            assert release.wait(WAIT), "the edit of a.md was never let go"
        return landed(view, tool, agent, changes)

    monkeypatch.setattr(tools, "landed", slow_for_a)
    answers: dict[str, dict[str, Any]] = {}

    def edit(ref: str) -> None:
        answers[ref] = calls.answer("memory_edit", {"agent": "t", "ref": ref, "append": f"more of {ref}"}, None)

    held = threading.Thread(target=edit, args=("a-1",))
    held.start()
    try:
        assert inside.wait(WAIT)
        other = threading.Thread(target=edit, args=("b-1",))
        other.start()
        other.join(WAIT)
        assert not other.is_alive(), "the edit of b.md waited for the edit of a.md"
        assert answers["b-1"]["status"] == "ok" and "a-1" not in answers
    finally:
        release.set()
        held.join(WAIT)
    assert answers["a-1"]["status"] == "ok"
    assert "more of a-1" in (vault.root / "a.md").read_text() and "more of b-1" in (vault.root / "b.md").read_text()


def test_edits_of_one_note_from_many_threads_lose_nothing(make_vault) -> None:
    """Appends to one note from eight threads at once: every paragraph in the file, one journal
    entry each, and the index holds the file's last version."""
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
    assert len([e for e in journal.entries(vault.index.dir) if e.path == "a.md"]) == 40
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


def test_waiting_for_the_file_steps_does_not_wait_for_steps_begun_later() -> None:
    """``wait_steps`` waits for the steps under way when asked; under steady writes a wait for
    a moment with none under way could last as long as the writes do."""
    written = Written()
    first_began, later_began, first_done = threading.Event(), threading.Event(), threading.Event()
    stop = threading.Event()

    def first() -> None:
        written.begin()
        first_began.set()
        assert first_done.wait(WAIT)
        written.end()

    def later() -> None:
        written.begin()
        later_began.set()
        stop.wait(WAIT)
        written.end()

    threads = [threading.Thread(target=first), threading.Thread(target=later)]
    threads[0].start()
    assert first_began.wait(WAIT)
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(written.wait_steps(WAIT)))
    waiter.start()
    threads[1].start()
    assert later_began.wait(WAIT)
    assert waiter.is_alive()  # the first steps are still under way
    first_done.set()
    waiter.join(WAIT)
    stop.set()
    for thread in threads:
        thread.join(WAIT)
    assert outcome == [True]
    assert written.wait_steps(0.0)  # none under way now


def test_a_file_lock_lets_one_thread_in_at_a_time(tmp_path: Path) -> None:
    inside = [0]
    most = [0]
    guard = threading.Lock()

    def take() -> None:
        for _ in range(20):
            with filelocks.held(tmp_path / "lock"):
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
        with filelocks.held(lock):
            assert mark.exists()
        holder.wait(WAIT)
