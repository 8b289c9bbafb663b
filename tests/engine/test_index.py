"""The index against real files: build, reconcile, a killed build, substring expansion."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_notes
from holding import HANG, held_environment, wait_held
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_mem import settings as vm_settings
from vault_mem.search.build import build, reconcile, sync
from vault_mem.search.hold import HOLD_AT
from vault_mem.search.segments import segments
from vault_mem.search.snapshot import searcher_of
from vault_mem.search.store import VaultIndex
from vault_mem.search.substring import segment_docs_containing


def snapshot(index: VaultIndex) -> dict[str, tuple[str, str, str]]:
    """What the index says about each note: (uid, etag, title)."""
    return {p: (r["uid"], r["etag"], r["title"]) for p, r in index.records().items()}


def note(uid: str | None, title: str, body: str) -> str:
    head = f"id: {uid}\n" if uid else ""
    return f"---\n{head}title: {title}\n---\n{body}\n"


def test_reconcile_after_add_modify_delete_rename_equals_fresh_build(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {
        "a/one.md": note("1", "One", "first"),
        "a/two.md": note("2", "Two", "second"),
        "b/three.md": note(None, "Three", "third"),
        "b/four.md": note(None, "Four", "fourth"),
    })
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    (root / "c").mkdir()
    (root / "c/five.md").write_text(note("5", "Five", "added"))  # add
    (root / "a/two.md").write_text(note("2", "Two v2", "second, edited"))  # modify
    (root / "b/four.md").unlink()  # delete
    os.rename(root / "b/three.md", root / "c/three-moved.md")  # rename across folders
    report = reconcile(index)
    assert (report.added, report.updated, report.removed) == (2, 1, 2)
    fresh = VaultIndex(root, tmp_path / "ix-fresh", config=vm_settings.current())
    build(fresh, procs=1)
    assert snapshot(index) == snapshot(fresh)
    again = reconcile(index)
    assert again.unchanged == 4 and again.added == again.updated == again.removed == 0


def test_touch_without_change_is_not_reindexed(tmp_path: Path) -> None:
    root = write_notes(tmp_path / "v", {"a.md": "hello\n"})
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    st_ = os.stat(root / "a.md")
    os.utime(root / "a.md", ns=(st_.st_atime_ns, st_.st_mtime_ns + 5_000_000_000))
    report = reconcile(index)
    assert report.updated == 0 and report.unchanged == 1


def test_parallel_build_matches_serial_build(tmp_path: Path) -> None:
    notes = {f"d{i % 7}/n{i}.md": note(f"u{i}", f"Note {i}", f"body {i} word{i % 13}") for i in range(1200)}
    root = write_notes(tmp_path / "v", notes)
    serial = VaultIndex(root, tmp_path / "ix1", config=vm_settings.current())
    build(serial, procs=1)
    parallel = VaultIndex(root, tmp_path / "ix2", config=vm_settings.current())
    build(parallel, procs=2)
    assert snapshot(parallel) == snapshot(serial)
    assert len(parallel.records()) == 1200
    assert parallel.is_complete()
    assert (tmp_path / "ix2" / ".gitignore").read_text() == "*\n"



def test_a_parallel_builds_workers_take_the_settings_of_the_index_they_build(tmp_path: Path) -> None:
    """A spawned worker starts from the defaults: it is handed the index's settings (the process's
    own are the defaults here)."""
    root = write_notes(tmp_path / "v", {f"n{i}.md": f"# Note {i}\n\n" + "word " * 200 for i in range(4)})
    # two batches at least: the parallel path
    config = dataclasses.replace(vm_settings.current(), build_batch=1, record_head_chars=40)
    index = VaultIndex(root, tmp_path / "ix", config=config)
    build(index, procs=2)
    with index.searching() as searcher:
        heads = [searcher.stored_fields(d)["record"]["head"] for d in range(searcher.doc_count_all())]
    assert len(heads) == 4 and all(len(head) <= 40 for head in heads), [len(h) for h in heads]

def test_an_index_of_an_older_schema_is_rebuilt_at_the_next_sync(tmp_path: Path) -> None:
    """After an upgrade that changes the index format (docs/index-and-sync.md), the old index
    is not read with the new schema: the next sync builds it again, from the files."""
    from vault_mem.search.schema import SCHEMA_VERSION

    root = write_notes(tmp_path / "v", {f"d/n{i}.md": note(f"u{i}", f"Note {i}", f"body {i}") for i in range(30)})
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    before = snapshot(index)
    index.close()
    index.set_state(schema=SCHEMA_VERSION - 1)  # what the previous version wrote
    assert VaultIndex(root, tmp_path / "ix", config=vm_settings.current()).needs_build()
    again = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    report = sync(again, procs=1)
    assert report.rebuilt and report.total == 30
    assert not again.needs_build() and again.is_complete() and snapshot(again) == before


def test_build_killed_half_way_is_repaired_at_next_start(tmp_path: Path) -> None:
    notes = {f"d{i % 5}/n{i}.md": note(f"u{i}", f"Note {i}", "x " * 200) for i in range(3000)}
    root = write_notes(tmp_path / "v", notes)
    index_dir = tmp_path / "ix"
    held = tmp_path / "held"  # the build stops after its first batch until it is killed (search/hold.py)
    child = subprocess.Popen(
        [sys.executable, "-m", "vault_mem", "index", "--rebuild", "--quiet", "--vault", str(root),
         "--index-dir", str(index_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env=held_environment("build-batch", held),
    )
    try:
        wait_held(held, child)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    index = VaultIndex(root, index_dir, config=vm_settings.current())
    assert not index.is_complete()
    done_before = len(index.records())
    assert 0 < done_before < 3000
    sync(index, procs=1)
    assert index.is_complete()
    fresh = VaultIndex(root, tmp_path / "fresh", config=vm_settings.current())
    build(fresh, procs=1)
    assert snapshot(index) == snapshot(fresh)


def test_a_build_worker_killed_fails_the_build_at_once_and_the_next_sync_repairs_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies (killed, out of memory) ends the build with a message naming it, at
    once and not after the other workers' batches; what was committed stays, the next sync
    finishes it."""
    import multiprocessing
    import threading
    import time

    notes = {f"d{i % 5}/n{i}.md": note(f"u{i}", f"Note {i}", "x " * 200) for i in range(3000)}
    root = write_notes(tmp_path / "v", notes)
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    held = tmp_path / "held"  # the build stops after its first batch (search/hold.py)
    monkeypatch.setenv(HOLD_AT, f"build-batch={held}")
    killed: list[int] = []
    ended: list[bool] = []

    def kill_the_workers() -> None:
        # While the build holds after its first batch. Both workers: the one that sent that batch
        # has just been handed the last one, but the other may have sent its own already, and a
        # worker killed after its last batch is one the build no longer needs.
        wait_held(held, running=lambda: not ended)
        for child in multiprocessing.active_children():
            child.kill()
            child.join(HANG)
            killed.append(child.exitcode or 0)
        while not ended:  # let the build go on, however many batches it still takes in
            held.unlink(missing_ok=True)
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_workers)
    killer.start()
    try:
        with pytest.raises(RuntimeError, match="index worker stopped"):
            build(index, procs=2)
    finally:
        ended.append(True)
        held.unlink(missing_ok=True)
        killer.join(timeout=HANG)
    assert killed and set(killed) == {-signal.SIGKILL}
    assert 0 < len(index.records()) < 3000 and not index.is_complete()
    sync(index, procs=1)
    assert index.is_complete() and len(index.records()) == 3000


WORDS = ["alpha", "beta", "gamma", "delta", "alphabet", "betamax", "omega", "megaphone", "über", "straße"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), needle=st.sampled_from(["al", "pha", "bet", "mega", "ga", "ber", "ße", "zz"]))
def test_substring_expansion_finds_what_a_plain_scan_finds(tmp_path_factory, seed: int, needle: str) -> None:
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("sub")
    bodies = {f"n{i}.md": " ".join(rng.choice(WORDS) + rng.choice(["", ",", "-x", "."]) for _ in range(8))
              for i in range(30)}
    root = write_notes(tmp / "v", bodies)
    index = VaultIndex(root, tmp / "ix", config=vm_settings.current())
    sync(index, procs=1)
    with index.searching() as s:
        listed = [d for seg in segments(s)
                  for d in seg.to_searcher_numbers(segment_docs_containing(seg, "body", needle))]
        containing = {s.stored_fields(d)["path"] for d in listed}
    expected = {p for p, b in bodies.items() if needle in b.lower()}
    assert containing == expected and listed == sorted(set(listed))


_SEGMENT = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N"), include_characters=" -_"),
                   min_size=1, max_size=12).map(str.strip).filter(lambda s: bool(s) and not s.startswith("."))
# Printable text: YAML itself refuses some code points (C1 controls, U+FFFE), which the reader
# rightly reports as malformed frontmatter; that case is in the conformance corpus.
_TITLE = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "M", "N", "P", "S", "Zs")),
                 min_size=1, max_size=40)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(notes=st.lists(st.tuples(st.lists(_SEGMENT, max_size=3), _TITLE), min_size=1, max_size=25))
def test_a_generated_vault_indexes_with_every_note_findable(tmp_path_factory, notes) -> None:
    from vault_mem.served.context import Vault, view_of
    from vault_mem.served.refs import resolve_ref

    tmp = tmp_path_factory.mktemp("gen")
    files = {}
    for i, (folders, title) in enumerate(notes):
        rel = "/".join([*folders, f"note {i}.md"])
        body = f"marker{i}x body text for note {i}\n"
        files[rel] = f"---\nid: gen-{i}\ntitle: {json_str(title)}\n---\n{body}"
    root = write_notes(tmp / "v", files)
    index = VaultIndex(root, tmp / "ix", config=vm_settings.current())
    sync(index, procs=1)
    with view_of(Vault(root, index)) as view:
        for i, rel in enumerate(files):
            doc = resolve_ref(view, f"gen-{i}")
            assert view.snapshot.record(doc)["path"] == rel
            assert view.snapshot.record(resolve_ref(view, rel))["uid"] == f"gen-{i}"
            marked = [d for seg in segments(searcher_of(view.snapshot))
                      for d in seg.to_searcher_numbers(segment_docs_containing(seg, "body", f"marker{i}x"))]
            assert {searcher_of(view.snapshot).stored_fields(d)["path"] for d in marked} == {rel}


def json_str(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    import json

    return json.dumps(text, ensure_ascii=False)


@pytest.mark.usefixtures("whoosh_patches")  # patch 5's run files
def test_postings_spilled_to_run_files_index_the_same_as_postings_sorted_in_memory(tmp_path: Path) -> None:
    """The build's posting pool (``postings.TermPool``) spills sorted runs to temp
    files when it outgrows its limit and merges them back: a tiny limit (hundreds of runs, so
    runs are merged into runs first) must give the same terms and postings as no spill."""
    from whoosh import index as whoosh_index
    from whoosh.writing import SegmentWriter

    from vault_mem.search.schema import document_of, make_schema
    from vault_mem.search.whoosh.postings import TermPool
    from vault_mem.vault.reader import read_note

    config = vm_settings.current()
    rng = random.Random(7)
    words = [f"w{i}" for i in range(400)]
    notes = {f"d{i % 4}/n{i}.md": note(f"u{i}", f"Note {i}", " ".join(rng.choices(words, k=60)))
             for i in range(300)}
    root = write_notes(tmp_path / "v", notes)

    def postings(limitmb: float, folder: str) -> tuple[int, dict[tuple[str, bytes], list[tuple[int, float]]]]:
        (tmp_path / folder).mkdir()
        ix = whoosh_index.create_in(str(tmp_path / folder), make_schema())
        writer = SegmentWriter(ix, limitmb=limitmb)
        assert isinstance(writer.pool, TermPool)
        for rel in sorted(notes):
            writer.add_document(**document_of(read_note(root, rel, config=config), rel, config.record_head_chars))
        runs = len(writer.pool.runs)
        writer.commit()
        with ix.reader() as reader:
            found = {(field, text): list(reader.postings(field, text).items_as("weight"))
                     for field, text in reader.all_terms()}
        return runs, found

    spilled_runs, spilled = postings(0.004, "spilled")
    kept_runs, kept = postings(256, "kept")
    assert kept_runs == 0 and spilled_runs > 128  # more runs than files open at once: runs merged first
    assert spilled == kept
    assert sum(len(p) for p in kept.values()) > TermPool.run_chunk  # more postings than one pickled chunk


def test_term_lengths_written_from_decoded_lengths_are_whooshs_own(tmp_path: Path, monkeypatch) -> None:
    """``whoosh_seam`` (patch 6) decodes each field's lengths once per segment instead of once per
    posting: every term's document frequency, min and max length and max weight must be what
    Whoosh's own flush writes (zero lengths included: empty titles, notes without a body)."""
    from whoosh import index as whoosh_index
    from whoosh.writing import SegmentWriter

    from vault_mem.search.schema import document_of, make_schema
    from vault_mem.search.whoosh import seam as whoosh_seam
    from vault_mem.vault.reader import read_note

    config = vm_settings.current()
    rng = random.Random(11)
    words = [f"w{i}" for i in range(300)]
    notes = {f"d{i % 3}/n{i}.md": note(f"u{i}", f"Note {i}" if i % 5 else "",
                                       " ".join(rng.choices(words, k=rng.randint(0, 200))))
             for i in range(150)}
    root = write_notes(tmp_path / "v", notes)

    def term_stats(folder: str) -> dict[tuple[str, bytes], tuple[int, int, int, float]]:
        (tmp_path / folder).mkdir()
        ix = whoosh_index.create_in(str(tmp_path / folder), make_schema())
        writer = SegmentWriter(ix)
        for rel in sorted(notes):
            writer.add_document(**document_of(read_note(root, rel, config=config), rel, config.record_head_chars))
        writer.commit()
        with ix.reader() as reader:
            return {(f, t): (i.doc_frequency(), i.min_length(), i.max_length(), i.max_weight())
                    for (f, t), i in ((key, reader.term_info(*key)) for key in reader.all_terms())}

    decoded = term_stats("decoded")
    monkeypatch.setattr(SegmentWriter, "_flush_segment", whoosh_seam.WHOOSH_FLUSH_SEGMENT)
    assert term_stats("whoosh") == decoded
    assert any(stats[1] == 0 for stats in decoded.values()) and any(stats[2] > 100 for stats in decoded.values())


def _live_paths(index: VaultIndex) -> list[str]:
    """Every live document's path, one entry per document (a path twice is a duplicate)."""
    with index.searching() as searcher:
        reader = searcher.reader()
        return sorted(reader.stored_fields(d)["path"] for d in reader.all_doc_ids())


def segment_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the segments Whoosh opens a reader on from now on, in order."""
    from whoosh.reading import SegmentReader

    opened: list[str] = []
    real_init = SegmentReader.__init__

    def counting_init(self, storage, schema, segment, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        opened.append(segment.segment_id())
        real_init(self, storage, schema, segment, *args, **kwargs)

    monkeypatch.setattr(SegmentReader, "__init__", counting_init)
    return opened


def test_saves_replace_their_note_without_opening_every_segment(tmp_path: Path, monkeypatch) -> None:
    """A writer finds the documents it replaces through readers kept from the last writer, and
    still replaces exactly them when another process (a second VaultIndex) deleted in between."""
    from vault_mem.vault.reader import read_note

    names = [f"n{k}.md" for k in range(6)]
    root = write_notes(tmp_path / "v", {name: note(None, name, "version 0") for name in names})
    ours = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    other = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    ours.fold_at = other.fold_at = None  # many segments, as between background merges
    sync(ours, procs=1)
    opened = segment_opens(monkeypatch)
    for version in range(1, 13):
        name = names[version % len(names)]
        (root / name).write_text(note(None, name, f"version {version}"))
        writer_index = other if version % 4 == 0 else ours  # now and then "another process" saves
        with writer_index.searching():  # the thread's searcher is renewed as a call would
            pass
        opened.clear()
        writer_index.apply([(read_note(root, name, config=vm_settings.current()), name)], [])
        if version > 4 and writer_index is ours:  # the segments changed since our last commit: ours
            assert len(opened) <= 4, opened  # (a deletion, a segment) and maybe the other's two
    assert len(segments_of(ours)) >= 10  # commits do not merge: Whoosh's writer would open them all
    assert _live_paths(ours) == sorted(names)
    for name in names:  # each note once, at its newest version
        body = (root / name).read_text()
        assert ours.records()[name]["etag"] == read_note(root, name, config=vm_settings.current()).etag, body


def test_a_renewed_searcher_opens_only_new_segments_and_sees_new_deletions(tmp_path: Path, monkeypatch) -> None:
    """After a save replaced a note held by an old segment, a thread's searcher is renewed by
    opening only the segment that commit wrote: the old segment's reader is remade around its
    new deletion on the files it had open, hides the replaced version, and still reads the
    segment's other notes (their stored records and their terms)."""
    from vault_mem.search.query import term_docs
    from vault_mem.search.segments import segments
    from vault_mem.vault.reader import read_note

    names = [f"n{k}.md" for k in range(4)]
    root = write_notes(tmp_path / "v", {name: note(None, name, f"version 0 common {name[:2]}") for name in names})
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    with index.searching():  # this thread's searcher over the built segment
        pass
    opened = segment_opens(monkeypatch)
    for version in (1, 2):
        (root / "n1.md").write_text(note(None, "n1.md", f"version {version} fresh{version}"))
        index.apply([(read_note(root, "n1.md", config=vm_settings.current()), "n1.md")], [])
        opened.clear()
        with index.searching() as searcher:
            assert len(opened) == 1, opened  # the new segment only
            reader = searcher.reader()
            paths = sorted(reader.stored_fields(d)["path"] for d in reader.all_doc_ids())
            assert paths == sorted(names)
            assert term_docs(segments(searcher), "body", ["common"]) == sorted(
                searcher.document_number(path=name) for name in names if name != "n1.md")
            assert len(term_docs(segments(searcher), "body", [f"fresh{version}"])) == 1
            assert searcher.document(path="n1.md")["record"]["etag"] == read_note(root, "n1.md",
                config=vm_settings.current()).etag


def segments_of(index: VaultIndex) -> list[object]:
    with index.searching() as searcher:
        return [reader for reader, _ in searcher.reader().leaf_readers()]



def test_a_writers_searcher_sees_the_deletions_committed_before_it(tmp_path: Path) -> None:
    """The readers kept between writers see their segment as it was committed when they were
    opened, never as a later writer changed it in place: the watcher asks a writer's searcher
    which version of a note the index holds, and an old version must not answer."""
    from vault_mem.vault.reader import read_note

    root = write_notes(tmp_path / "v", {"a.md": note(None, "A", "a0"), "b.md": note(None, "B", "b0")})
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    for version in (1, 2):
        (root / "a.md").write_text(note(None, "A", f"a{version}"))
        index.apply([(read_note(root, "a.md", config=vm_settings.current()), "a.md")], [])
    writer = index.acquire_writer()
    try:
        searcher = writer.searcher()
        held = searcher.stored_fields(searcher.document_number(path="a.md"))["record"]["etag"]
    finally:
        writer.cancel()
    assert held == read_note(root, "a.md", config=vm_settings.current()).etag
    assert _live_paths(index) == ["a.md", "b.md"]


def test_live_commits_fold_the_tiny_segments_they_leave(tmp_path: Path) -> None:
    """Saves one by one do not pile up segments: every few commits fold the tiny ones into the
    new one, with each note once, at its newest version (docs/index-and-scale.md)."""
    from vault_mem import settings
    from vault_mem.vault.reader import read_note

    names = [f"n{k}.md" for k in range(5)]
    root = write_notes(tmp_path / "v", {name: note(None, name, "version 0") for name in names})
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    built = len(segments_of(index))
    most = 0
    for version in range(1, 41):
        name = names[version % len(names)]
        (root / name).write_text(note(None, name, f"version {version} word{version}"))
        index.apply([(read_note(root, name, config=vm_settings.current()), name)], [])
        most = max(most, len(segments_of(index)))
    assert most <= built + settings.current().tiny_fold
    assert _live_paths(index) == sorted(names)
    records = index.records()
    assert all(records[name]["etag"] == read_note(root, name, config=vm_settings.current()).etag for name in names)
    with index.searching() as searcher:
        from whoosh.query import Term

        assert len(list(searcher.docs_for_query(Term("body", "word40")))) == 1
        assert list(searcher.docs_for_query(Term("body", "word35"))) == []  # replaced since


def test_a_small_segments_term_sets_answer_as_whooshs_own_term_lookup(tmp_path: Path) -> None:
    """Segments of at most ``term_set_below`` documents answer ``term_docs`` from a set of each field's
    terms: for every field, every term they hold and terms they lack, the same documents as the
    hashed lookup in the terms file that larger segments use (a file name that is not UTF-8 too)."""
    from conftest import commit_note

    import vault_mem.search.segments as segs_module

    rng = random.Random(5)
    names = ["coder", "Reviewer", "qa-bot", "ünïcode"]
    notes = {f"d{i % 3}/n{i}.md": f"---\nto: {rng.choice(names)}\nagent: {rng.choice(names)}\n"
                                  f"tags: [{rng.choice('xyz')}]\nstatus: {rng.choice(['active', 'archived'])}\n"
                                  f"---\nBody {i} [[n{rng.randrange(20)}]]\n" for i in range(20)}
    root = write_notes(tmp_path / "v", notes)
    index = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(index, procs=1)
    commit_note(index, "d0/late.md", "---\nto: latecomer\n---\nlate\n")  # a second, one-note segment
    if sys.platform.startswith("linux"):
        odd = os.fsdecode(b"d1/odd-\xff.md")
        (root / odd).write_text("odd\n", encoding="utf-8")
        sync(index, procs=1)
    probing = dataclasses.replace(index.config, term_set_below=-1)  # the hashed lookup, as a big segment
    with index.searching() as searcher:
        parts = segments(searcher)
        assert len(parts) >= 2 and all(seg.size <= seg.config.term_set_below for seg in parts)
        from whoosh.fields import ID, KEYWORD

        # term_docs is asked of the exact-term fields (a number field's terms are not text)
        fields = [name for name, kind in searcher.schema.items() if isinstance(kind, ID | KEYWORD)]
        assert {"to", "agent", "tags", "key_uid", "path", "status"} <= set(fields)
        for seg in parts:
            for field in fields:
                asked = [t.decode("utf-8", "surrogateescape") if isinstance(t, bytes) else str(t)
                         for t in seg.reader.lexicon(field)] + ["absent", "", "coder2"]
                for value in asked:
                    with_sets = seg.term_docs(field, value)
                    fresh = segs_module.Segment(seg.reader, seg.offset, config=probing)
                    assert with_sets == fresh.term_docs(field, value), (field, value)
                    assert "_field_terms" not in vars(fresh)  # probed: no set made
            assert "_field_terms" in vars(seg)


def test_the_segments_of_an_indexs_searcher_tune_by_that_indexs_settings(tmp_path: Path) -> None:
    """The index hands its settings over with each searcher it opens (``VaultIndex.searching``): two
    indexes of one folder in one process, opened with different ``term_set_below``, each look a term
    up their own way (a set of the segment's terms, or a probe of its terms file), whatever the
    process's settings are; a searcher no index opened has no settings to tune by, and says so."""
    from whoosh import index as whoosh_index

    from vault_mem.search.lru import CACHE

    root = write_notes(tmp_path / "v", {f"n{i}.md": f"---\ntags: [t{i % 3}]\n---\nbody {i}\n" for i in range(12)})
    sets = VaultIndex(root, tmp_path / "ix", config=vm_settings.current())
    sync(sets, procs=1)
    probes = VaultIndex(root, tmp_path / "ix", config=dataclasses.replace(sets.config, term_set_below=-1))
    CACHE.clear()
    with probes.searching() as searcher:
        parts = segments(searcher)
        assert parts and all(seg.config is probes.config for seg in parts)
        probed = [seg.term_docs("tags", "t1") for seg in parts]
        assert all(CACHE.peek(("field terms", seg.key, "tags")) is None for seg in parts)
    with sets.searching() as searcher:
        parts = segments(searcher)
        assert all(seg.config is sets.config for seg in parts)
        assert [seg.term_docs("tags", "t1") for seg in parts] == probed and sum(map(len, probed)) == 4
        assert all(CACHE.peek(("field terms", seg.key, "tags")) is not None for seg in parts)
    with whoosh_index.open_dir(str(tmp_path / "ix")).searcher() as plain, \
            pytest.raises(RuntimeError, match=r"not opened by VaultIndex\.searching"):
        segments(plain)
