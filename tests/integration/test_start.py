"""A start as a new user meets it: the first call of a one-call session on a fresh vault answers
complete, an answer during a build counts real notes, a build stopped with its server keeps its
batches and the next session finishes it, and a save made while the start-up check (or the
periodic check) walks the vault is visible before that walk ends (docs/index-and-sync.md)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import SAMPLE_VAULT, ToolClient, Tuned, eventually, write_notes
from holding import held_environment, wait_held
from mcp import Client, StdioServerParameters

from vault_mem import settings
from vault_mem.mcp_server.app import build_server
from vault_mem.runtime.lifecycle import Runtime
from vault_mem.runtime.watcher import Watcher
from vault_mem.search.api import VaultIndex, note_count, reading, sync
from vault_mem.served.context import Vault
from vault_mem.vault.walk import walk_vault

pytestmark = pytest.mark.anyio
HANG = 60.0  # generous: only a hang fails


def fresh_sample(tmp_path: Path) -> Path:
    root = tmp_path / "sample_vault"
    shutil.copytree(SAMPLE_VAULT, root, ignore=shutil.ignore_patterns(".vault-mem"))
    return root


def serve(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vault_mem", "serve", "--vault", str(root)],
                                 cwd=str(root.parent))


async def one_call(root: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    """A session that calls once and leaves, as the MCP Inspector's CLI mode does."""
    async with Client(serve(root), mode="legacy") as client:
        return await ToolClient(client).call(tool, **arguments)


def paths(answer: dict[str, Any]) -> list[str]:
    return [row["permalink"] for row in answer.get("notes", [])]


async def test_the_first_call_of_one_call_sessions_on_a_fresh_sample_vault_answers_complete(tmp_path: Path) -> None:
    root = fresh_sample(tmp_path)
    answers = [await one_call(root, "memory_search", agent="test", query="memory") for _ in range(3)]
    first = answers[0]
    assert first["status"] == "ok" and paths(first), first
    assert "indexing" not in first, first  # the call waited for the half-second build
    assert all(paths(answer) == paths(first) for answer in answers), answers
    index = VaultIndex(root, config=settings.current())
    assert index.is_complete()
    assert note_count(index) == len(walk_vault(root).files)


async def test_an_answer_during_a_build_counts_the_notes_on_disk(tmp_path: Path) -> None:
    """The resume of an interrupted build (an index with nothing committed yet) answers what it has,
    ``0 of 3``: real counts from the files, never ``0 of 0``."""
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(3)})
    index = VaultIndex(root, config=settings.current())
    index.create()  # what a build killed before its first commit leaves: complete: false, no notes
    index.close()
    walking, go = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        walking.set()
        go.wait(HANG)

    runtime = Runtime(index, pace=pace, first_answer_wait=0.2)
    runtime.start()
    try:
        assert walking.wait(HANG)
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            answer = await ToolClient(client).call("memory_search", agent="test", query="queues")
        assert answer["status"] == "none" and answer["indexing"] == {"done": 0, "total": 3}, answer
        assert any("0 of 3 notes" in hint for hint in answer["hints"]), answer
        go.set()
        assert runtime.wait_ready(HANG)
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            answer = await ToolClient(client).call("memory_search", agent="test", query="queues")
        assert answer["status"] == "ok" and len(answer["notes"]) == 3 and "indexing" not in answer, answer
    finally:
        go.set()
        runtime.stop()
        index.close()


def many_notes(root: Path, count: int) -> Path:
    for i in range(count):
        folder = root / f"area{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note {i:05d}.md").write_text(f"# Note {i}\n\n" + f"words about topic {i % 97}. " * 30,
                                                  encoding="utf-8")
    return root


def notes_committed(root: Path) -> int:
    index = VaultIndex(root, config=settings.current())
    try:
        if index.needs_build():
            return 0
        return note_count(index)
    except Exception:  # the build is replacing the table of contents right now: look again
        return 0
    finally:
        index.close()


@pytest.mark.skipif(sys.platform == "win32", reason="sends Ctrl-C as a POSIX signal to a process group")
async def test_a_build_stopped_with_its_server_keeps_its_batches_and_the_next_session_finishes_it(
        tmp_path: Path) -> None:
    root = many_notes(tmp_path / "vault", 4000)  # a parallel build: batches of 1,000 published as they end
    held = tmp_path / "held"  # the build child stops after its first batch until Ctrl-C (search/hold.py)
    server = subprocess.Popen([sys.executable, "-m", "vault_mem", "serve", "--vault", str(root)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True, env=held_environment("build-batch", held))
    try:
        wait_held(held, server)
        kept = notes_committed(root)
        assert kept > 0, "the held build has published its first batch"
        os.killpg(server.pid, signal.SIGINT)  # Ctrl-C: the server stops its build child at once
        _, err = server.communicate(timeout=HANG)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.communicate()
    assert server.returncode == 130 and b"Traceback" not in err, err
    assert not VaultIndex(root, config=settings.current()).is_complete()
    assert notes_committed(root) >= kept  # what the stopped build committed is still there

    async with Client(serve(root), mode="legacy") as client:
        session = ToolClient(client)
        first = await session.call("list_by_domain", domain="area0", limit=1)
        if "indexing" in first:  # the resume outlasted the first answer's wait: it says how far it got
            assert first["indexing"]["total"] == 4000 and first["indexing"]["done"] >= kept, first
        deadline = time.monotonic() + 600
        answer = first
        while "indexing" in answer:
            assert time.monotonic() < deadline, answer
            answer = await session.call("list_by_domain", domain="area0", limit=1)
    assert notes_committed(root) == 4000 and VaultIndex(root, config=settings.current()).is_complete()


def atomic_save(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


async def found(session: ToolClient, word: str) -> list[str]:
    return paths(await session.call("memory_search", agent="test", query=word))


async def wait_found(session: ToolClient, word: str) -> list[str]:
    deadline = time.monotonic() + HANG
    while not (hits := await found(session, word)):
        assert time.monotonic() < deadline, f"{word!r} never became visible"
        await anyio.sleep(0.02)
    return hits


async def test_a_save_behind_the_start_up_check_is_visible_while_the_check_still_walks(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(5)})
    index = VaultIndex(root, config=settings.current())
    sync(index)  # an index exists: serving starts with the start-up check
    index.close()
    at_last_file, go = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        if rel == "n4.md":  # the walk has passed n0..n3: a save to one of them is behind it
            at_last_file.set()
            go.wait(HANG)

    runtime = Runtime(index, pace=pace)
    runtime.start()
    try:
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            session = ToolClient(client)
            assert at_last_file.wait(HANG)
            atomic_save(root / "n1.md", "# Note 1\n\nabout queues and a zeppelin\n")
            assert await wait_found(session, "zeppelin") == ["memory://n1"]  # the walk is still held
            assert not runtime.wait_ready(0)
            go.set()
            assert runtime.wait_ready(HANG)
            assert await found(session, "zeppelin") == ["memory://n1"]  # the check did not undo it
    finally:
        go.set()
        runtime.stop()
        index.close()


async def test_a_save_behind_the_periodic_check_is_visible_while_the_check_still_walks(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(5)})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    at_last_file, go = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        if rel == "n4.md":
            at_last_file.set()
            go.wait(HANG)

    watcher = Watcher(index, reconcile_every=0.05, pace=pace)
    watcher.start()
    try:
        async with Client(build_server(Vault(root, index)), mode="legacy") as client:
            session = ToolClient(client)
            assert at_last_file.wait(HANG)
            atomic_save(root / "n2.md", "# Note 2\n\nabout queues and a dirigible\n")
            assert await wait_found(session, "dirigible") == ["memory://n2"]
    finally:
        go.set()
        watcher.stop()
        index.close()


async def test_a_paused_watcher_applies_what_it_heard_once_resumed(tmp_path: Path) -> None:
    """While a build owns the index the watcher only listens; what it heard is applied after."""
    root = write_notes(tmp_path / "v", {"n0.md": "# Note 0\n\nabout queues\n"})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    watcher = Watcher(index)
    watcher.start(paused=True)
    try:
        atomic_save(root / "n0.md", "# Note 0\n\nabout queues and a blimp\n")
        eventually(watcher.queued, timeout=HANG, what="the save heard")  # queued, not applied
        assert watcher.indexed == 0
        watcher.resume()
        assert watcher.wait_idle(HANG)
        async with Client(build_server(Vault(root, index)), mode="legacy") as client:
            assert await found(ToolClient(client), "blimp") == ["memory://n0"]
    finally:
        watcher.stop()
        index.close()


async def test_the_start_up_check_lets_the_first_calls_go_first_and_gives_way_to_calls(
        tmp_path: Path, tuned: Tuned) -> None:
    """Once the server is loaded, the check of an existing index does not start while the session's
    first call is in flight, and while it walks it pauses now and then for a call in flight; it
    still ends (runtime/lifecycle.py)."""

    tuned(check_give_way_every=1)
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(5)})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    index.close()
    calls_seen: list[int] = []
    walking, call_open = threading.Event(), threading.Event()

    def pace(rel: str) -> None:
        calls_seen.append(runtime._calls)
        if rel == "n2.md" and not call_open.is_set():
            walking.set()
            call_open.wait(HANG)

    loaded = threading.Event()
    runtime = Runtime(index, pace=pace)
    runtime.start(check_after=loaded)
    try:
        with runtime.answering():  # a call in flight as the server finishes loading
            loaded.set()
            eventually(lambda: runtime.waited_for_calls, timeout=HANG, what="the check waiting for the call")
            assert not calls_seen and not runtime.wait_ready(0)
        assert walking.wait(HANG)
        assert calls_seen and not any(calls_seen)  # it started once no call was in flight
        with runtime.answering():  # a call arrives while the check walks
            call_open.set()
            eventually(lambda: runtime.gave_way, timeout=HANG, what="the check giving way")
        assert runtime.wait_ready(HANG) and runtime.report is not None and runtime.report.unchanged == 5
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            assert await found(ToolClient(client), "queues")
        assert runtime._calls == 0  # a served call holds ``answering`` only while it runs
    finally:
        call_open.set()
        runtime.stop()
        index.close()


async def test_the_start_up_check_does_not_wait_for_the_calls_after_the_first(tmp_path: Path, tuned: Tuned) -> None:
    """Issue 54: a client that keeps asking (a search every 20 ms) never left the check the quiet
    moment it waited for, so it waited out its bound (10 s) while answers said ``checking: done 0``.
    It starts once the session's first call is answered, and ends while the next call is still
    in flight, however long the bound (here an hour); answers say ``checking`` until then."""
    tuned(calls_first_at_most=3600.0)
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(5)})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    index.close()
    loaded = threading.Event()
    runtime = Runtime(index)
    runtime.start(check_after=loaded)
    try:
        async with Client(build_server(Vault(root, index, health=runtime)), mode="legacy") as client:
            answer = await ToolClient(client).call("memory_search", agent="t", query="queues")
            assert answer["checking"] == {"done": 0, "total": 5}, answer  # not loaded yet: not started
        with contextlib.ExitStack() as first:
            first.enter_context(runtime.answering())  # the session's first call, as the server is loaded
            loaded.set()
            eventually(lambda: runtime.waited_for_calls, timeout=HANG, what="the check waiting for the first call")
            with runtime.answering():  # the next call: in flight before the first is answered, and after
                first.close()
                assert runtime.wait_ready(HANG), "the check waited for a quiet moment that never came"
                assert runtime.checking() is None and runtime.report is not None and runtime.report.unchanged == 5
    finally:
        runtime.stop()
        index.close()


def test_the_start_up_check_gives_way_to_the_watchers_saves_too(tmp_path: Path, tuned: Tuned) -> None:
    """While the watcher has a save to apply, the walking check waits for it now and then, as it
    pauses for a call in flight: a save made during the check is the watcher's to apply at once, and
    the check, in the same process, would otherwise hold the interpreter lock against it. The wait is
    bounded: here the watcher stays held for the whole walk, and the check still ends."""
    tuned(check_give_way_every=1)
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\nabout queues\n" for i in range(6)})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    index.close()
    paused_for: list[int] = []

    def pace(rel: str) -> None:
        watcher = runtime.watcher
        assert watcher is not None
        if rel == "n1.md":  # a save the watcher has heard and not yet applied, during the walk
            watcher.pause()
            atomic_save(root / "n0.md", "# Note 0\n\nabout queues and a kumquat\n")
            eventually(watcher.queued, timeout=HANG, what="the save heard")
        paused_for.append(runtime.gave_way)

    runtime = Runtime(index, pace=pace)
    runtime.start()
    try:
        assert runtime.wait_ready(HANG)
        assert runtime._calls == 0 and runtime.gave_way >= 3, paused_for  # no call: it paused for the save
        eventually(lambda: runtime.watcher is not None and runtime.watcher.indexed >= 1, timeout=HANG,
                   what="the save applied once the watcher was let go")
    finally:
        runtime.stop()
        index.close()


def test_every_folder_is_watched_once_the_runtime_has_started(tmp_path: Path) -> None:
    """Issue 54 supposed the watcher was not yet watching every folder when the first answer went
    out. ``Runtime.start`` returns with the observer watching the root and every visible folder at
    any depth, before the server loads (the first answer comes after that): a save in each is
    applied while the start-up check has not even begun."""
    folders = ["", "a", "a/b", "a/b/c", "d", "d/e"]
    root = write_notes(tmp_path / "v", {f"{f}/n.md".lstrip("/"): "# Note\n\nabout queues\n" for f in folders})
    index = VaultIndex(root, config=settings.current())
    sync(index)
    index.close()
    never_loaded = threading.Event()  # the check waits for it: it does not run in this test
    runtime = Runtime(index)
    runtime.start(check_after=never_loaded)
    try:
        for folder in folders:
            with open(root / folder / "n.md", "a", encoding="utf-8") as out:  # a plain append
                out.write("appended after the start: heard\n")
        assert runtime.watcher is not None

        def all_applied() -> bool:
            with reading(index) as snapshot:
                sizes = {f: snapshot.record(snapshot.by_path(f"{f}/n.md".lstrip("/")))["size"]
                         for f in folders}
            return all(size == (root / f / "n.md").stat().st_size for f, size in sizes.items())

        eventually(all_applied, timeout=HANG, what="every folder's save applied by the watcher")
        assert not runtime.wait_ready(0) and runtime.checking() is not None  # the check never ran
    finally:
        never_loaded.set()
        runtime.stop()
        index.close()


def test_a_worker_that_does_not_write_follows_the_files_through_the_writers_commits(tmp_path: Path) -> None:
    """Of ``serve --workers N``, only worker 1 (``writes``) watches the files: a serving worker runs
    no watcher, and a file saved in an editor is found through it once worker 1 indexed it."""
    root = write_notes(tmp_path / "v", {"a.md": "# Alpha\n\nfirst\n"})
    writer_index = VaultIndex(root, tmp_path / "ix", config=settings.current())
    reader_index = VaultIndex(root, tmp_path / "ix", config=settings.current())
    writer, reader = Runtime(writer_index), Runtime(reader_index, merges=False, writes=False)
    writer.start()
    assert writer.wait_ready(HANG)
    reader.start()
    try:
        assert reader.wait_ready(HANG)
        assert reader.watcher is None and writer.watcher is not None
        (root / "b.md").write_text("# Bravo\n\nsaved by hand\n", encoding="utf-8")

        def found_by_reader() -> bool:
            with reading(reader_index) as snapshot:
                return snapshot.by_path("b.md") is not None

        eventually(found_by_reader, timeout=HANG, what="worker 1's commit seen by the serving worker")
    finally:
        reader.stop()
        writer.stop()
        reader_index.close()
        writer_index.close()


def test_the_watching_process_follows_a_vault_folder_that_came_back_without_any_call(tmp_path: Path) -> None:
    """Worker 1 of ``serve --workers N`` gets no calls (each call notices a vanished vault), so it
    looks at the vault folder itself: a folder deleted and made again is watched anew, and a save
    in it is indexed well before the periodic check."""
    root = write_notes(tmp_path / "v", {"a.md": "# Alpha\n\nfirst\n"})
    index = VaultIndex(root, tmp_path / "ix", config=settings.current())
    runtime = Runtime(index)
    runtime.start()
    try:
        assert runtime.wait_ready(HANG)
        first = runtime.watcher
        shutil.rmtree(root)
        root.mkdir()
        eventually(lambda: runtime.watcher is not first, timeout=HANG, what="a new watcher on the new folder")
        assert runtime.wait_ready(HANG)
        (root / "b.md").write_text("# Bravo\n\nsaved in the folder that came back\n", encoding="utf-8")

        def indexed() -> bool:
            with reading(index) as snapshot:
                return snapshot.by_path("b.md") is not None

        eventually(indexed, timeout=30, what="the save in the new folder indexed")  # the check: 60 s
    finally:
        runtime.stop()
        index.close()
