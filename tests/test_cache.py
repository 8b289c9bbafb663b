"""The process's one cache (index/lru.py): bounded in bytes, least recently used out first,
and shared by every call thread, so a segment's column is held once however many threads read."""

from __future__ import annotations

import threading

from vault_mem.index.columns import segment_column
from vault_mem.index.lru import CACHE, Lru
from vault_mem.index.segments import segments


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

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 3 and len(set(seen)) == 1
    assert 0 < CACHE.bytes <= CACHE.max_bytes


def test_threads_share_one_unpickled_record_and_an_edit_is_seen(make_vault) -> None:
    from conftest import commit_note

    from vault_mem.index.columns import stored_record

    vault = make_vault({f"n{i}.md": f"# Note {i}\nbody {i}\n" for i in range(30)})
    seen: list[int] = []

    def read() -> None:
        with vault.index.searching() as searcher:
            doc = searcher.document_number(path="n7.md")
            seen.append(id(stored_record(searcher, doc)))

    threads = [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 3 and len(set(seen)) == 1
    # An edit lands in a new segment: the record cached for the old one is never served for it.
    commit_note(vault.index, "n7.md", "# Note 7 edited\nnew body\n")
    with vault.index.searching() as searcher:
        records = [stored_record(searcher, d) for d in range(searcher.doc_count_all())
                   if not searcher.reader().is_deleted(d)]
        assert sorted(r["path"] for r in records) == sorted(f"n{i}.md" for i in range(30))
        assert stored_record(searcher, searcher.document_number(path="n7.md"))["title"] == "Note 7 edited"
