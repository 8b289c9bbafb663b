"""The process's one cache (search/lru.py): bounded in bytes, least recently used out first,
and shared by every call thread, so a segment's column is held once however many threads read."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from conftest import in_threads

from vault_mem import settings
from vault_mem.search.columns import segment_column
from vault_mem.search.lru import CACHE, Lru, size_cache
from vault_mem.search.segments import segments

HANG = 60.0  # generous: only a hang fails


def test_the_cache_stays_within_its_byte_bound_dropping_the_least_recently_used() -> None:
    cache = Lru(max_bytes=10_000)
    for i in range(50):
        cache.get_or_make(("k", i), lambda i=i: "x" * 900 + str(i))
        assert cache.bytes <= 10_000
    made: list[int] = []
    # The newest entries are still there; the oldest were dropped.
    assert cache.get_or_make(("k", 49), lambda: made.append(49) or "new").endswith("49")
    assert cache.get_or_make(("k", 0), lambda: made.append(0) or "remade") == "remade"
    assert made == [0]


def test_a_value_too_big_for_the_cache_is_returned_but_not_kept() -> None:
    cache = Lru(max_bytes=4_000)
    big = cache.get_or_make("big", lambda: "y" * 2_000)
    assert big == "y" * 2_000 and cache.bytes == 0


def test_threads_share_one_copy_of_a_segment_column(make_vault) -> None:
    vault = make_vault({f"n{i}.md": f"# Note {i}\nbody {i}\n" for i in range(30)})
    seen: list[int] = []

    def read() -> None:
        with vault.index.searching() as searcher:  # each thread has its own searcher and readers
            for seg in segments(searcher):
                seen.append(id(segment_column(seg, "path")))

    in_threads(read, 3)
    assert len(seen) == 3 and len(set(seen)) == 1
    assert 0 < CACHE.bytes <= CACHE.max_bytes


def test_threads_share_one_unpickled_record_and_an_edit_is_seen(make_vault) -> None:
    from conftest import commit_note

    from vault_mem.search.columns import stored_record

    vault = make_vault({f"n{i}.md": f"# Note {i}\nbody {i}\n" for i in range(30)})
    seen: list[int] = []

    def read() -> None:
        with vault.index.searching() as searcher:
            doc = searcher.document_number(path="n7.md")
            seen.append(id(stored_record(searcher, doc)))

    in_threads(read, 3)
    assert len(seen) == 3 and len(set(seen)) == 1
    # An edit lands in a new segment: the record cached for the old one is never served for it.
    commit_note(vault.index, "n7.md", "# Note 7 edited\nnew body\n")
    with vault.index.searching() as searcher:
        records = [stored_record(searcher, d) for d in range(searcher.doc_count_all())
                   if not searcher.reader().is_deleted(d)]
        assert sorted(r["path"] for r in records) == sorted(f"n{i}.md" for i in range(30))
        assert stored_record(searcher, searcher.document_number(path="n7.md"))["title"] == "Note 7 edited"


def test_cells_answer_as_the_whole_column_does_without_reading_it(make_vault, monkeypatch) -> None:
    """search/cells.py: a few documents' values from the segments' column readers, equal to the
    joined column's, across segments, deletions and a segment without a value; past
    WHOLE_AFTER lookups the column is joined after all."""
    from conftest import commit_note, commit_removal

    from vault_mem.search.cells import LazyColumn
    from vault_mem.search.columns import column, has_columns

    vault = make_vault({f"n{i}.md": f"---\nupdated: 2024-01-{i + 1:02d}\n---\n# Note {i}\n" for i in range(20)})
    commit_note(vault.index, "n3.md", "---\nupdated: 2025-02-02\n---\n# Note 3 again\n")  # a new segment
    commit_note(vault.index, "late.md", "# No date of its own\n")
    commit_removal(vault.index, "n5.md")
    CACHE.clear()
    for field in ("updated", "path", "created"):
        with vault.index.searching() as searcher:
            cells = LazyColumn(searcher, field, vault.index.config.cells_whole_after)
            got = [cells[d] for d in reversed(range(searcher.doc_count_all()))]
            assert not has_columns(searcher, field)  # nothing was joined
            assert got == list(reversed(column(searcher, field)))
    with vault.index.searching() as searcher:
        searcher._vault_mem_columns = {}
        cells = LazyColumn(searcher, "path", 3)  # joined whole after three cells
        values = [cells[d] for d in range(searcher.doc_count_all())]
        assert has_columns(searcher, "path") and values == list(column(searcher, "path"))


def test_a_served_process_warms_the_shared_caches_once_ready_and_changes_nothing(make_vault) -> None:
    """mcp_server/warm.py: once the index is ready, a few read queries fill what every call
    thread shares (a segment's listing order, its columns) so that the first client calls do not
    make them; they run no write and keep nothing for any agent, and each one answers."""
    import hashlib
    import threading

    from vault_mem.mcp_server.warm import WARM_CALLS, warm_up, warm_when_ready
    from vault_mem.search.segments import segments as view_segments

    vault = make_vault({f"d{i % 3}/n{i}.md": f"---\nid: n{i}\ntags: [memory]\ncreated: 2025-01-0{1 + i % 9}\n---\n"
                        f"A memory of {i}.\n" for i in range(12)})

    def files() -> dict[str, str]:
        return {str(p.relative_to(place)): hashlib.sha256(p.read_bytes()).hexdigest()
                for place in (vault.root, vault.index.dir) for p in sorted(place.rglob("*")) if p.is_file()}

    before = files()
    CACHE.clear()
    with vault.index.searching() as searcher:
        keys = [("listing order", seg.key, False) for seg in view_segments(searcher)]
    ready = threading.Event()
    thread = warm_when_ready(vault, ready.wait)
    assert thread.is_alive() and all(CACHE.peek(key) is None for key in keys)  # it waits for the index
    ready.set()
    thread.join(60)
    assert not thread.is_alive()
    assert keys and all(CACHE.peek(key) is not None for key in keys)
    assert files() == before  # no note, no agent state, no journal: reading only
    assert warm_up(vault) == len(WARM_CALLS)  # every query answers (none fails quietly)


def test_searchers_of_the_same_segments_share_one_joined_column_and_a_commit_makes_a_new_one(make_vault) -> None:
    """search/columns.py: the call threads renew their searchers after the same commit; the
    first joins a field's column and the others take that one (a tuple, which the garbage
    collector checks once). A new segment makes a new join, with its values."""
    from conftest import commit_note

    from vault_mem.search.columns import column

    vault = make_vault({f"n{i}.md": f"# Note {i}\n" for i in range(5)})
    with vault.index.searching() as first:
        shared = column(first, "path")
    got: list[Any] = []

    def other_thread() -> None:  # a call thread of its own, with its own searcher
        with vault.index.searching() as second:
            got.extend([second, column(second, "path")])

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join(HANG)
    assert got and got[0] is not first
    assert isinstance(shared, tuple) and got[1] is shared
    commit_note(vault.index, "late.md", "# Late\n")
    with vault.index.searching() as third:
        renewed = column(third, "path")
        assert renewed is not shared and "late.md" in renewed and set(shared) < set(renewed)


def test_the_cache_is_sized_by_its_composition_root_not_by_the_process_settings() -> None:
    """``size_cache`` (what each root calls with its settings' ``cache_mb``) bounds the one cache,
    dropping the least recently used past a smaller bound at once; the process's settings, changed
    later (``settings.use``), no longer steer it."""
    before = CACHE.max_bytes
    try:
        CACHE.clear()
        for i in range(8):
            CACHE.get_or_make(("sized", i), lambda i=i: "z" * 200_000 + str(i))
        size_cache(1)
        assert CACHE.max_bytes == 2**20 and CACHE.bytes <= 2**20
        assert CACHE.peek(("sized", 0)) is None and CACHE.peek(("sized", 7)) is not None  # the newest kept
        size_cache(0.1)
        assert CACHE.max_bytes == 2**20  # under 1 counts as 1, as VAULT_MEM_CACHE_MB does
        with settings.use(dataclasses.replace(settings.current(), cache_mb=3)):
            assert CACHE.max_bytes == 2**20
    finally:
        CACHE.resize(before)
