"""A held index lock is a wait, not a failure (docs/index-and-sync.md): reconciles and the watcher take their
turn; a write tool that cannot get the lock in time answers a retryable ``error`` after its
file is safely written, and the watcher indexes that file once the lock is free. The lock is
held by a real second process, as another server or a build would hold it."""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from vault_mem import settings
from vault_mem.runtime.lifecycle import Runtime
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.build import SyncReport, reconcile
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault

pytestmark = pytest.mark.anyio

HOLDER = """
import sys
from whoosh import index
w = index.open_dir(sys.argv[1]).writer()
print("locked", flush=True)
sys.stdin.readline()
w.cancel()
"""


@contextmanager
def lock_held_by_another_process(index: VaultIndex) -> Iterator[None]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(index.dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield
    finally:
        if proc.stdin is not None:
            proc.stdin.write("\n")
            proc.stdin.close()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_reconcile_meeting_a_held_lock_waits_instead_of_failing(make_vault) -> None:
    vault = make_vault({"a.md": "# A\nfirst\n"})
    index = vault.index
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(reconcile(index))
        except BaseException as exc:
            outcome.append(exc)

    with lock_held_by_another_process(index):
        (vault.root / "b.md").write_text("# B\nsecond note, written while the lock is held\n", encoding="utf-8")
        worker = threading.Thread(target=run)
        worker.start()
        worker.join(1.5)  # long past a reconcile of two notes: it is waiting, not failing
        assert worker.is_alive() and not outcome, outcome
    worker.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], SyncReport), outcome
    assert outcome[0].added == 1
    index.close()
    assert set(index.fingerprints()) == {"a.md", "b.md"}


def test_the_start_up_reconcile_waits_for_a_held_lock_and_never_reports_indexing_failed(
        make_vault, caplog: pytest.LogCaptureFixture) -> None:
    vault = make_vault({"a.md": "# A\nfirst\n"})
    runtime = Runtime(vault.index)
    try:
        with caplog.at_level(logging.INFO), lock_held_by_another_process(vault.index):
            (vault.root / "c.md").write_text("# C\nadded before the start\n", encoding="utf-8")
            runtime.start()
            assert not runtime.wait_ready(1.5), "the reconcile cannot have finished: the lock is held"
        assert runtime.wait_ready(60)
        assert runtime.error is None
        assert runtime.report is not None and runtime.report.added == 1
        assert "indexing failed" not in caplog.text and "LockError" not in caplog.text
    finally:
        runtime.stop()


async def test_a_write_tool_that_cannot_get_the_lock_answers_a_retryable_error_after_writing_its_file(
        make_vault, mcp_session) -> None:
    vault: Vault = make_vault({"a.md": "# A\nfirst\n"})
    vault.index.write_timeout = 0.3
    watcher = Watcher(vault.index)
    watcher.start()
    try:
        async with mcp_session(vault) as client:
            with lock_held_by_another_process(vault.index):
                answer = await client.call("memory_write", agent="tester", title="Written while locked",
                                           content="The body of a note written while the lock is held.")
                assert answer["status"] == "error"
                assert "was saved" in answer["message"] and "do not repeat" in answer["message"]
                path = vault.root / answer["path"]
                assert "written while the lock is held" in path.read_text(encoding="utf-8")
            # Once the lock is free, the watcher indexes the file the tool wrote.
            found: dict[str, object] = {}
            deadline = time.monotonic() + 30
            while not found.get("notes"):
                assert time.monotonic() < deadline, "the watcher did not index the written file"
                found = await client.call("memory_search", agent="tester", query="Written while locked")
            assert [n["permalink"] for n in found["notes"]] == [answer["permalink"]]  # type: ignore[index]
    finally:
        watcher.stop()


def test_the_watcher_waits_for_a_held_lock_and_then_indexes(make_vault) -> None:
    vault = make_vault({"a.md": "# A\nfirst\n"})
    asked = threading.Event()
    acquire = vault.index.acquire_writer

    def acquire_writer(timeout: float | None = None) -> object:
        asked.set()  # the flush has reached the lock: the real wait follows
        return acquire(timeout)

    vault.index.acquire_writer = acquire_writer  # type: ignore[method-assign]
    watcher = Watcher(vault.index)
    watcher.start()
    try:
        with lock_held_by_another_process(vault.index):
            (vault.root / "d.md").write_text("# D\nsaved while the lock is held\n", encoding="utf-8")
            # The flush waits for the lock: the change stays pending, not dropped.
            assert asked.wait(30), "the watcher did not ask for the lock"
            assert not watcher.wait_idle(0), "the watcher cannot have indexed it: the lock is held"
        assert watcher.wait_idle(60)
        vault.index.close()
        assert "d.md" in vault.index.fingerprints()
    finally:
        watcher.stop()



# -- group commit: writes in flight share a commit (search/store.py, VaultIndex.submit) --------


def _generation(index: VaultIndex) -> int:
    with index.searching() as searcher:
        return int(searcher.reader().generation())


def test_writes_waiting_for_a_commit_share_the_next_one(make_vault) -> None:
    from vault_mem.vault.reader import read_note

    vault = make_vault({f"n{k}.md": f"---\ntitle: N{k}\n---\nversion 0\n" for k in range(6)})
    index = vault.index
    for k in range(6):
        (vault.root / f"n{k}.md").write_text(f"---\ntitle: N{k}\n---\nversion 1\n")
    before = _generation(index)
    errors: list[BaseException] = []

    def save(k: int) -> None:
        try:
            index.apply([(read_note(vault.root, f"n{k}.md", config=settings.current()), f"n{k}.md")], [])
        except BaseException as exc:  # reported below
            errors.append(exc)

    with lock_held_by_another_process(index):
        threads = [threading.Thread(target=save, args=(k,)) for k in range(6)]
        threads[0].start()  # its batch closes when it starts committing: it waits for the lock
        deadline = time.monotonic() + 30
        while not (index._committing.locked() and index._open_batch is None) and time.monotonic() < deadline:
            time.sleep(0.01)
        for thread in threads[1:]:  # these five join one batch behind it
            thread.start()
        while (index._open_batch is None or len(index._open_batch.changes) < 5) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index._open_batch is not None and len(index._open_batch.changes) == 5
    for thread in threads:
        thread.join(60)
    assert not errors
    assert _generation(index) == before + 2  # two commits for six saves
    records = index.records()
    assert all(read_note(vault.root, f"n{k}.md",
        config=settings.current()).etag == records[f"n{k}.md"]["etag"] for k in range(6))


def test_in_one_batch_a_paths_last_change_wins(make_vault) -> None:
    from vault_mem.vault.reader import read_note

    vault = make_vault({"a.md": "---\ntitle: A\n---\nfirst\n", "b.md": "---\ntitle: B\n---\nb\n"})
    index = vault.index
    old = read_note(vault.root, "a.md", config=settings.current())
    (vault.root / "a.md").write_text("---\ntitle: A\n---\nsecond\n")
    new = read_note(vault.root, "a.md", config=settings.current())
    batch = index.submit([(old, "a.md")], [])
    assert index.submit([(new, "a.md")], ["b.md"]) is batch  # one open batch
    index.submit([(read_note(vault.root, "b.md", config=settings.current()), "b.md")], [])  # dropped, then saved again
    index.commit_batch(batch)
    records = index.records()
    assert records["a.md"]["etag"] == new.etag and "b.md" in records
    with index.searching() as searcher:
        assert searcher.doc_count() == 2


def test_a_commit_waits_for_a_write_between_its_file_change_and_its_submission(make_vault, monkeypatch) -> None:
    """Group commit gathers (search/store.py ``GATHER``): the leader, holding the commit, lets a write
    tool whose file steps are under way submit into its batch, so both land in one commit."""
    from vault_mem.vault.reader import read_note

    vault = make_vault({"a.md": "---\ntitle: A\n---\na\n", "b.md": "---\ntitle: B\n---\nb\n"})
    index = vault.index
    index.config = dataclasses.replace(index.config, commit_gather=60.0)  # only the other write's end lets it go on
    joined: list[object] = []

    def other_write() -> None:
        index.file_steps.begin()
        started.set()
        deadline = time.monotonic() + 30
        while not index._committing.locked() and time.monotonic() < deadline:
            time.sleep(0.001)  # until the leader holds the commit
        joined.append(index.submit([(read_note(vault.root, "b.md", config=settings.current()), "b.md")], []))
        index.file_steps.end()

    started = threading.Event()
    batch = index.submit([(read_note(vault.root, "a.md", config=settings.current()), "a.md")], [])
    thread = threading.Thread(target=other_write)
    thread.start()
    assert started.wait(30)
    index.commit_batch(batch)
    thread.join(30)
    assert joined == [batch] and set(batch.changes) == {"a.md", "b.md"}


def _recorded_sleeps(monkeypatch) -> list[float]:
    """search/store.py's sleeps, recorded instead of slept. Only its own ``time`` is replaced: the
    time module's ``sleep`` stays real for every other thread of the test process."""
    from vault_mem.search import store

    waits: list[float] = []

    class Clock:
        def __getattr__(self, name: str) -> object:
            return getattr(time, name)

        def sleep(self, seconds: float) -> None:
            waits.append(seconds)

    monkeypatch.setattr(store, "time", Clock())
    return waits


def test_commits_under_steady_saves_are_spaced_and_a_lone_callers_are_not(make_vault, monkeypatch) -> None:
    """Under steady saves a commit starts ``SPACING`` after the last one began, the saves made
    meanwhile joining it (search/store.py); saves one after another from a lone caller never wait."""
    from vault_mem.vault.reader import read_note

    vault = make_vault({f"n{k}.md": f"---\ntitle: N{k}\n---\nbody\n" for k in range(4)})
    index = vault.index
    index.config = dataclasses.replace(index.config, commit_spacing=600.0)  # far beyond the test: any wait is seen
    waits = _recorded_sleeps(monkeypatch)

    def note(k: int) -> tuple[object, str]:
        return read_note(vault.root, f"n{k}.md", config=settings.current()), f"n{k}.md"

    for k in range(3):  # a lone caller: one save per commit, nobody else writing
        index.apply([note(k)], [])
    assert waits == []
    batch = index.submit([note(0)], [])
    index.submit([note(1)], [])  # two saves in one batch: steady saves
    index.commit_batch(batch)
    assert len(waits) == 1 and 599 < waits[0] <= 600
    index.apply([note(2)], [])  # the batch before held two: still steady
    assert len(waits) == 2
    index.apply([note(3)], [])  # the one before held one: a lone caller again
    assert len(waits) == 2
    index.file_steps.begin()  # another thread's write in its file steps: steady again
    other = threading.Thread(target=lambda: index.apply([note(0)], []))
    other.start()
    other.join(60)
    index.file_steps.end()
    assert len(waits) == 3
    assert index.records()["n3.md"]["etag"] == note(3)[0].etag


def test_a_spaced_commit_waits_no_longer_than_its_timeout(make_vault, monkeypatch) -> None:
    from vault_mem.vault.reader import read_note

    vault = make_vault({"a.md": "---\ntitle: A\n---\na\n", "b.md": "---\ntitle: B\n---\nb\n"})
    index = vault.index
    index.config = dataclasses.replace(index.config, commit_spacing=600.0)
    waits = _recorded_sleeps(monkeypatch)
    index.apply([(read_note(vault.root, "a.md", config=settings.current()), "a.md")], [])
    batch = index.submit([(read_note(vault.root, "a.md", config=settings.current()), "a.md")], [])
    index.submit([(read_note(vault.root, "b.md", config=settings.current()), "b.md")], [])
    index.commit_batch(batch, timeout=20.0)
    assert len(waits) == 1 and 0 < waits[0] <= 20.0


def test_a_writer_lets_go_of_the_lock_however_it_ends(make_vault) -> None:
    """A commit, a cancel and a wait that gave up each let go of the index's lock, or the next
    writer would wait forever; while a writer lives, another of the same process waits."""
    from vault_mem.errors import IndexBusy

    index = make_vault({"a.md": "---\ntitle: A\n---\na\n"}).index
    index.acquire_writer().cancel()
    index.acquire_writer(timeout=30).commit()
    with lock_held_by_another_process(index), pytest.raises(IndexBusy):
        index.acquire_writer(timeout=0.2)
    writer = index.acquire_writer(timeout=30)
    with pytest.raises(IndexBusy):
        index.acquire_writer(timeout=0.2)  # held while the writer lives
    writer.cancel()
    index.acquire_writer(timeout=30).cancel()  # let go


def test_a_batch_whose_commit_failed_takes_no_more_changes(make_vault) -> None:
    from vault_mem.errors import IndexBusy
    from vault_mem.vault.reader import read_note

    vault = make_vault({"a.md": "---\ntitle: A\n---\na\n"})
    index = vault.index
    (vault.root / "a.md").write_text("---\ntitle: A\n---\nchanged\n")
    note = read_note(vault.root, "a.md", config=settings.current())
    with lock_held_by_another_process(index):
        failed = index.submit([(note, "a.md")], [])
        with pytest.raises(IndexBusy):
            index.commit_batch(failed, timeout=0.2)
    later = index.submit([(note, "a.md")], [])
    assert later is not failed
    index.commit_batch(later, timeout=30)
    assert index.records()["a.md"]["etag"] == note.etag


def test_an_index_folder_another_worker_is_making_is_not_taken_for_other_files(tmp_path) -> None:
    """Two workers start at once on a new --index-dir: what the first has put there so far (its
    probe, its wait for the lock) must not make the second refuse the folder."""
    from vault_mem.errors import VaultUnavailable
    from vault_mem.search.folder import usable_index_dir

    root = tmp_path / "v"
    root.mkdir()
    for name, make in ((".probe.4242", "file"), ("waiting", "dir"), ("MAIN_WRITELOCK", "file")):
        folder = tmp_path / f"ix-{name.strip('.')}"
        folder.mkdir()
        (folder / name).mkdir() if make == "dir" else (folder / name).write_bytes(b"")
        assert usable_index_dir(root, folder) == folder
    other = tmp_path / "ix-other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(VaultUnavailable, match="holds other files"):
        usable_index_dir(root, other)
