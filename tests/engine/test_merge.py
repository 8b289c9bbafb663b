"""Merging off the live path (docs/index-and-scale.md): a save during a merge is visible
without waiting for it, a merge killed at any moment loses nothing, two processes never merge at
once, and the index folder holds only what the index needs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import Tuned, commit_note, write_notes
from filelock import FileLock
from holding import held_environment, wait_held
from whoosh.reading import SegmentReader

from vault_mem import settings
from vault_mem.reads.memory_search import memory_search
from vault_mem.runtime.watcher import Watcher
from vault_mem.search import commits, merge
from vault_mem.search.build import build
from vault_mem.search.merge import MERGE_LOCK, merge_all, merge_once, plan
from vault_mem.search.store import VaultIndex
from vault_mem.served.context import Vault, view_of
from vault_mem.settings import Settings
from vault_mem.vault.reader import read_note
from vault_mem.vault.walk import walk_vault

NEEDED = {".gitignore", "state.json", "MAIN_WRITELOCK", "build.lock", MERGE_LOCK, "presence", "waiting"}


def note(i: int, extra: str = "") -> str:
    return f"---\nid: n{i}\ntitle: Note {i}\n---\nBody of note number {i} about gardening. {extra}\n"


def many_segments(tmp_path: Path, notes: int = 60, singles: int = 2 * Settings().merge_factor,
                  due: bool = True) -> VaultIndex:
    """A vault of ``notes`` notes whose index holds a built segment plus ``singles`` one-note commits."""
    root = write_notes(tmp_path / "vault", {f"d{i % 3}/n{i}.md": note(i) for i in range(notes)})
    index = VaultIndex(root, tmp_path / "index", config=settings.current())
    index.fold_at = None  # the live commits' own folding of tiny segments would merge them first
    build(index, procs=1)
    for i in range(singles):
        commit_note(index, f"d{i % 3}/n{i}.md", note(i, f"edited {i}"))
    assert bool(plan(index.open()._read_toc().segments, settings.current())) == due
    return index


def search(index: VaultIndex, word: str) -> list[str]:
    with view_of(Vault(index.root, index)) as view:
        answer = memory_search(view, {"agent": "test", "query": word})
    return [row["permalink"] for row in answer.get("notes", [])]


def assert_index_equals_files(index: VaultIndex) -> None:
    index.close()
    on_disk = {rel: read_note(index.root, rel, config=settings.current()).etag for rel in walk_vault(index.root).files}
    stored = {path: etag for path, (_size, _mtime, etag) in index.fingerprints().items()}
    assert stored == on_disk
    with index.searching() as searcher:
        assert searcher.doc_count() == len(on_disk)  # no duplicates left by a merge


def segment_files(index: VaultIndex) -> tuple[set[str], set[str]]:
    toc = index.open()._read_toc()
    wanted = {f"{s.segment_id()}.seg" for s in toc.segments} | {f"_MAIN_{toc.generation}.toc"}
    return wanted, {name for name in os.listdir(index.dir) if name not in NEEDED}


def assert_no_debris(index: VaultIndex) -> None:
    index.close()
    wanted, present = segment_files(index)
    assert present == wanted, f"unexpected: {sorted(present - wanted)}; missing: {sorted(wanted - present)}"


def test_a_save_during_a_merge_is_visible_without_waiting_for_it(tmp_path: Path) -> None:
    index = many_segments(tmp_path)
    root = index.root
    toc = index.open()._read_toc()
    before = len(toc.segments)
    # Two notes whose live copies the merge will rewrite: one to edit, one to delete meanwhile.
    in_merge = []
    for segment in plan(toc.segments, settings.current()):
        reader = SegmentReader(index.open().storage, toc.schema, segment)
        in_merge += [reader.stored_fields(d)["path"] for d in reader.all_doc_ids()]
        reader.close()
    edited, deleted = sorted(in_merge)[:2]
    written, release = threading.Event(), threading.Event()
    outcome: list[object] = []

    def hold() -> None:  # the merged segment is written; the swap waits for the test
        written.set()
        assert release.wait(60)

    def run() -> None:
        try:
            outcome.append(merge.merge_once(index.dir, settings.current(), hold))
        except BaseException as exc:
            outcome.append(exc)

    watcher = Watcher(index)
    watcher.start()
    merging = threading.Thread(target=run)
    try:
        merging.start()
        assert written.wait(60)
        # While the merge is under way: a new note, an edit and a deletion of merged notes.
        temp = root / "d0" / ".new.md.tmp"
        temp.write_text(note(900, "zucchinimerge"), encoding="utf-8")
        os.replace(temp, root / "d0" / "new.md")
        (root / edited).write_text(note(1, "pumpkinmerge"), encoding="utf-8")
        (root / deleted).unlink()
        deadline = time.monotonic() + 30
        while not (search(index, "zucchinimerge") and search(index, "pumpkinmerge")):
            assert time.monotonic() < deadline, "the saves were not visible while the merge ran"
            time.sleep(0.02)
        assert merging.is_alive() and not outcome, "the merge must still be under way"
        assert watcher.wait_idle(30)
        release.set()
        merging.join(60)
        assert outcome and isinstance(outcome[0], merge.MergeResult), outcome
        assert outcome[0].carried >= 2  # the edit's and the deletion's old copies went too
        assert len(index.open()._read_toc().segments) < before
        assert search(index, "zucchinimerge") == ["memory://d0/new"]
        assert search(index, "pumpkinmerge") == [f"memory://{edited[:-3]}"]
        assert_index_equals_files(index)
        assert_no_debris(index)
    finally:
        release.set()
        watcher.stop()


@pytest.mark.parametrize("step", ["merge-writing", "merge-swap", "merge-publish"])
def test_a_merge_killed_at_any_moment_leaves_an_index_equal_to_the_files(tmp_path: Path, step: str) -> None:
    """Killed while it writes its segment, once it is written, and with the write lock held after
    it moved the segment in but before the table of contents names it (each step held, then killed:
    search/hold.py); the next merge cleans what it left."""
    index = many_segments(tmp_path, notes=400, singles=4 * Settings().merge_factor)
    index.close()
    held = tmp_path / "held"
    proc = subprocess.Popen([sys.executable, "-m", "vault_mem.runtime.tuning", str(index.dir)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=held_environment(step, held))
    try:
        wait_held(held, proc)
        assert (index.dir / merge.WORK_DIR).exists()  # mid-merge
        if step == "merge-publish":  # the merged segment is in the index folder, named by no TOC
            wanted, present = segment_files(index)
            assert present - wanted, "the swap has moved the merged segment in"
    finally:
        proc.kill()
        proc.wait(30)
    assert proc.returncode != 0, "killed, not finished"
    assert plan(index.open()._read_toc().segments, settings.current()), "the killed merge changed nothing"
    index.close()
    assert_index_equals_files(index)
    assert search(index, "gardening")
    # The next merge (or any commit) cleans what the killed one left.
    assert merge_all(index.dir, settings.current())
    assert not plan(index.open()._read_toc().segments, settings.current())
    assert_index_equals_files(index)
    index.tidy()
    assert_no_debris(index)


def test_two_processes_never_merge_at_once(tmp_path: Path) -> None:
    index = many_segments(tmp_path, notes=200, singles=3 * Settings().merge_factor)
    index.close()
    command = [sys.executable, "-m", "vault_mem.runtime.tuning", str(index.dir)]
    # While another process holds the merge lock, a merge process does nothing.
    generation = index.open()._read_toc().generation
    with FileLock(str(index.dir / MERGE_LOCK)):
        held = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert "another process is merging" in held.stderr
    assert index.open()._read_toc().generation == generation
    # Two started at once: exactly one merges, the other finds the lock held (or nothing left).
    procs = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    logs = [proc.communicate(timeout=120)[1] for proc in procs]
    merged = [log.count("merged ") for log in logs]
    assert sorted(merged)[0] == 0 and sorted(merged)[1] >= 1, logs
    index.close()
    assert not plan(index.open()._read_toc().segments, settings.current())
    assert_index_equals_files(index)
    assert_no_debris(index)


def autogroup_writable() -> bool:
    """Whether a process here may lower its own autogroup's priority (Linux with autogroup
    scheduling, and no container rule against writing the file)."""
    if not Path("/proc/self/autogroup").exists():
        return False
    probe = "import os; os.setsid(); open('/proc/self/autogroup', 'w').write('19')"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60).returncode == 0


def test_a_merge_process_takes_a_session_of_its_own_at_the_lowest_autogroup_priority() -> None:
    if not autogroup_writable():  # asked here, not as a skip mark: a mark runs its probe at every collection
        pytest.skip("no Linux autogroup scheduling that a process may lower here")
    # What `python -m vault_mem.search.merge` does first, in a child of its own as a merge is.
    probe = ("import os; from vault_mem.runtime.tuning import merge_gives_way; "
             "from vault_mem.settings import Settings; parent = os.getsid(0); merge_gives_way(Settings()); "
             "print(os.getsid(0) == os.getpid() != parent, os.nice(0), "
             "open('/proc/self/autogroup').read().split()[-1])")
    before = subprocess.run([sys.executable, "-c", "import os; print(os.nice(0))"], capture_output=True,
                            text=True, timeout=60, check=True).stdout.split()
    own_session, nice, group_nice = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                                   timeout=60, check=True).stdout.split()
    assert own_session == "True"
    assert int(nice) == min(19, int(before[0]) + 10)
    assert group_nice == "19"


def test_a_parallel_build_leaves_only_the_index_in_its_folder(tmp_path: Path) -> None:
    # 1,700 notes on 2 workers: batches of 1,000 and 700, and the last, under the lowest tier's
    # floor, is folded into the first (alone, every merge of the saves' segments would take it).
    root = write_notes(tmp_path / "vault", {f"d{i % 7}/n{i}.md": note(i) for i in range(1700)})
    index = VaultIndex(root, tmp_path / "index", config=settings.current())
    build(index, procs=2)
    assert_no_debris(index)
    segments = index.open()._read_toc().segments
    assert not plan(segments, settings.current()), "a cold build ends with few segments"
    floor = Settings().merge_floor
    assert all(s.doc_count_all() >= floor for s in segments), [s.doc_count_all() for s in segments]
    assert_index_equals_files(index)


def test_debris_of_killed_writers_is_removed_under_the_lock(tmp_path: Path) -> None:
    index = many_segments(tmp_path, notes=20, singles=1, due=False)
    (index.dir / "MAIN.tmp").mkdir()  # a live writer's pool, killed
    (index.dir / "MAIN-4242.tmp").mkdir()  # a build worker's
    (index.dir / "_MAIN_99.toc.1733000000.5").write_bytes(b"half")  # a TOC write cut short
    old = index.dir / ".state.json.4242.tmp"
    old.write_text("{}")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    fresh = index.dir / ".state.json.4343.tmp"  # maybe being written right now: kept
    fresh.write_text("{}")
    assert sorted(index.tidy()) == sorted(["MAIN.tmp", "MAIN-4242.tmp", "_MAIN_99.toc.1733000000.5",
                                           ".state.json.4242.tmp"])
    fresh.unlink()
    assert_no_debris(index)


def test_a_served_vault_merges_its_small_segments_in_the_background(make_vault) -> None:
    from vault_mem.runtime.lifecycle import Runtime

    vault = make_vault({f"d/n{i}.md": note(i) for i in range(20)})
    runtime = Runtime(vault.index)
    runtime.start()
    vault.index.fold_at = None  # the live commits' own folding of tiny segments would merge them first
    try:
        assert runtime.wait_ready(60)
        for i in range(Settings().merge_factor + 2):  # live commits: one small segment each, never a merge
            commit_note(vault.index, f"d/n{i}.md", note(i, f"live {i}"))
        assert len(vault.index.open()._read_toc().segments) > Settings().merge_factor
        deadline = time.monotonic() + 120
        while (merge.merge_due(vault.index.dir, settings.current())
               or (runtime._merger and runtime._merger.poll() is None)):
            assert time.monotonic() < deadline, "no background merge happened"
            time.sleep(0.05)
        assert len(vault.index.open()._read_toc().segments) <= Settings().merge_factor
        assert_index_equals_files(vault.index)
    finally:
        runtime.stop()


def test_a_few_edits_leave_a_built_segment_in_its_tier_and_many_merge_it_down(tmp_path: Path, monkeypatch,
                                                                             tuned) -> None:
    """Tiers count a segment's deleted documents too (``merge.tier_size``): editing a few notes
    of a cold build's smallest segments must not drop them into the lowest tier, where the
    live commits' one-note segments are merged (that rewrote them right after every build);
    once more than half its notes are deleted, a segment is merged down and its dead dropped."""
    tuned(merge_floor=20)
    tuned(tiny_segment=0)  # the tiers alone: no segment is left to the live folds here
    notes = 24  # one built segment: 24 documents, tier 1 with a floor of 20
    root = write_notes(tmp_path / "vault", {f"d/n{i}.md": note(i) for i in range(notes)})
    index = VaultIndex(root, tmp_path / "index", config=settings.current())
    index.fold_at = None  # the live commits' own folding of tiny segments would merge them first
    build(index, procs=1)

    def edit(i: int) -> None:
        commit_note(index, f"d/n{i}.md", note(i, f"edited {i}"))

    for i in range(Settings().merge_factor):  # 8 edits: 16 of 24 built documents live, 8 one-note segments
        edit(i)
    segments = index.open()._read_toc().segments
    built = max(segments, key=lambda s: s.doc_count_all())
    assert (built.doc_count(), built.doc_count_all()) == (notes - Settings().merge_factor, notes)
    chosen = plan(segments, settings.current())
    assert len(chosen) == Settings().merge_factor and built not in chosen  # the one-note segments only
    factor = Settings().merge_factor
    for i in range(factor, factor + 5):  # 11 of 24 live: under half, so it tiers by its live count
        edit(i)
    segments = index.open()._read_toc().segments
    assert any(s.segment_id() == built.segment_id() for s in plan(segments, settings.current()))
    merge_all(index.dir, settings.current())
    assert_index_equals_files(index)


def index_contents(index: VaultIndex) -> tuple[dict[str, object], dict[tuple[str, bytes], list[tuple[str, float]]]]:
    """What a search can see of ``index``: each live note's stored record and field lengths, and
    each term's live postings (note path, weight)."""
    with index.searching() as searcher:
        reader = searcher.reader()
        live = [d for d in range(reader.doc_count_all()) if not reader.is_deleted(d)]
        paths = {d: reader.stored_fields(d)["path"] for d in live}
        fields = [name for name, field in index.open().schema.items() if field.scorable]
        records = {paths[d]: (reader.stored_fields(d), [reader.doc_field_length(d, f, 0) for f in fields])
                   for d in live}
        postings: dict[tuple[str, bytes], list[tuple[str, float]]] = {}
        for fieldname, term in reader.all_terms():
            matcher = reader.postings(fieldname, term)
            found = []
            while matcher.is_active():
                if matcher.id() in paths:
                    found.append((paths[matcher.id()], matcher.weight()))
                matcher.next()
            if found:
                postings[(fieldname, term)] = sorted(found)
    return records, postings


def test_folding_its_own_tiny_segments_from_their_notes_gives_the_index_reading_them_gives(
        tmp_path: Path, monkeypatch) -> None:
    """A live commit folds the tiny segments this process committed from the notes they were made
    of (``commits.OwnTiny``) instead of reading them back: the same notes, terms, weights and
    lengths as the fold that reads them, deletions and notes edited twice between folds included."""

    opened: list[int] = []
    real_reader = commits.SegmentReader

    def counted(*args: object, **kwargs: object) -> object:
        opened.append(1)
        return real_reader(*args, **kwargs)

    monkeypatch.setattr(commits, "SegmentReader", counted)
    # Each step edits one to three notes (some twice in a row) and now and then deletes one.
    steps = [([f"d/n{i % 5}.md" for i in range(k, k + 1 + k % 3)], [f"d/n{11 - k}.md"] if k % 4 == 3 else [])
             for k in range(14)]
    results = []
    for name, own in (("own", True), ("read", False)):
        root = write_notes(tmp_path / name, {f"d/n{i}.md": note(i) for i in range(30)})  # built: not tiny
        for path in root.rglob("*.md"):  # the two vaults alike to the nanosecond
            os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
        index = VaultIndex(root, tmp_path / f"{name}-index", config=settings.current())
        build(index, procs=1)
        index.fold_at = 4
        if not own:
            index.own_tiny.keep = lambda segment_id, notes: None  # type: ignore[method-assign]
        opened.clear()
        for k, (edits, removals) in enumerate(steps):
            notes = []
            for rel in dict.fromkeys(edits):
                (root / rel).write_text(note(int(rel[3:-3]), f"edit {k}"), encoding="utf-8")
                os.utime(root / rel, ns=(1_700_000_000_000_000_000 + k, 1_700_000_000_000_000_000 + k))
                notes.append((read_note(root, rel, config=settings.current()), rel))
            for rel in removals:
                (root / rel).unlink()
            index.apply(notes, removals)
        assert bool(opened) != own, "own tiny segments are folded from their notes, others read"
        assert len(index.open()._read_toc().segments) < len(steps)  # folds happened
        results.append(index_contents(index))
        on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*.md")}
    (own_records, own_postings), (read_records, read_postings) = results
    assert own_records.keys() == read_records.keys() == on_disk
    for path, (stored, lengths) in own_records.items():
        other_stored, other_lengths = read_records[path]
        assert lengths == other_lengths, path
        assert {k: v for k, v in stored.items() if k != "record"} == \
            {k: v for k, v in other_stored.items() if k != "record"}, path
    assert own_postings == read_postings


def test_a_merge_leaves_the_tiny_segments_to_the_live_folds_and_is_not_voided_by_one(
        tmp_path: Path, tuned: Tuned) -> None:
    """Under steady saves every eighth live commit folds the tiny segments in. A merge that took
    them too found them gone at its swap and voided its work (the segments then piled up to 40);
    it now merges the others, and takes tiny segments only when more piled up than a fold takes."""
    tuned(merge_floor=30)  # the built segment of 40 notes is in the tier above
    root = write_notes(tmp_path / "vault", {f"built/n{i}.md": note(i) for i in range(40)})
    index = VaultIndex(root, tmp_path / "index", config=settings.current())
    build(index, procs=1)
    notes = {f"d/n{i}.md": note(i) for i in range(Settings().merge_factor * 25 + Settings().tiny_fold)}
    write_notes(root, notes)
    rels = sorted(notes)
    for batch in range(Settings().merge_factor):  # eight small segments above the tiny size: a merge is due
        index.apply([(read_note(root, rel,
            config=settings.current()), rel) for rel in rels[batch * 25:(batch + 1) * 25]], [])
    for rel in rels[Settings().merge_factor * 25:]:  # and as many tiny ones as the next live commit folds
        index.apply([(read_note(root, rel, config=settings.current()), rel)], [])
    segments = index.open()._read_toc().segments
    assert sum(s.doc_count_all() <= Settings().tiny_segment for s in segments) == Settings().tiny_fold
    chosen = plan(segments, settings.current())
    assert len(chosen) == Settings().merge_factor and all(s.doc_count_all() > Settings().tiny_segment for s in chosen)

    def live_commit_meanwhile() -> None:  # folds the tiny segments, as the next save does
        commit_note(index, rels[0], note(0, "saved during the merge"))

    result = merge_once(index.dir, settings.current(), before_swap=live_commit_meanwhile)
    assert result is not None and result.merged == Settings().merge_factor
    left = index.open()._read_toc().segments
    # The built segment, the merged one, and the live commit's with the tiny ones folded in.
    assert sorted(s.doc_count_all() for s in left) == [Settings().tiny_fold + 1, 40, Settings().merge_factor * 25]
    assert_index_equals_files(index)
    # With more tiny segments than a fold takes (no live commit folds them), the merge takes them.
    index.fold_at = None
    for i in range(Settings().tiny_fold + 1):
        commit_note(index, rels[i], note(i, f"again {i}"))
    tiny = [s for s in plan(index.open()._read_toc().segments, settings.current())
            if s.doc_count_all() <= Settings().tiny_segment]
    assert len(tiny) == Settings().tiny_fold + 2
