"""The build's own path from documents to postings (``search/whoosh/postings.py``) writes what Whoosh writes."""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import random
from pathlib import Path
from typing import Any

import pytest
import whoosh.writing
from conftest import write_notes
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import index as whoosh_index
from whoosh.writing import SegmentWriter

from vault_mem.search.schema import document_of, make_schema
from vault_mem.search.whoosh import parts as whoosh_parts
from vault_mem.search.whoosh import postings
from vault_mem.search.whoosh import seam as whoosh_seam
from vault_mem.settings import Settings
from vault_mem.vault.reader import read_note

# Words that lower-casing or Unicode make tricky: U+0130 lower-cases to "i" plus a combining dot
# (not a word character), final sigma, ß, digits of other scripts, marks, joiners, emoji.
_TRICKY = ["İstanbul", "ΣΊΣΥΦΟΣ", "Straße", "ǅemal", "١٢٣", "e\u0301te", "a\u200db", "naïve", "日本語",
           "🙂x", "under_score", "Ⅻ", "ﬁne", "K", "x\x1fy", "", " ", "\x1f\x1f"]
_TEXT = st.lists(st.one_of(st.sampled_from(_TRICKY), st.text(max_size=12)), max_size=30).map(" ".join)

pytestmark = pytest.mark.usefixtures("whoosh_patches")  # what each patch does, with every patch in place
CONFIG = Settings()  # what the segments written here are read and written by


@settings(max_examples=300, deadline=None)
@given(value=_TEXT)
def test_the_fast_terms_of_every_field_kind_are_whooshs_own(value: str) -> None:
    schema = make_schema()
    known = 0
    for name, field in schema.items():
        fast = postings.terms_of(field)
        if fast is None:
            continue
        known += 1
        assert fast(value) == list(field.index(value)), name
    assert known >= 20  # the text, keyword and id fields: all but numbers and the stored record


def test_a_field_kind_not_known_here_is_left_to_whoosh() -> None:
    from whoosh.analysis import StemmingAnalyzer
    from whoosh.fields import NGRAM, NUMERIC, STORED, TEXT

    for field in (TEXT(analyzer=StemmingAnalyzer()), TEXT(), NGRAM(), NUMERIC(), STORED()):
        assert postings.terms_of(field) is None


def segment_content(folder: Path) -> dict[str, Any]:
    """Everything a segment holds, by document number: terms with postings and term statistics,
    field lengths, columns and stored fields."""
    ix = whoosh_index.open_dir(str(folder))
    with ix.reader() as reader:
        docs = list(reader.all_doc_ids())
        schema = reader.schema
        terms = {}
        for key in reader.all_terms():
            info = reader.term_info(*key)
            m = reader.postings(*key)
            items = []
            while m.is_active():
                items.append((m.id(), m.weight(), m.value()))
                m.next()
            terms[key] = (items, info.doc_frequency(), info.weight(), info.min_length(), info.max_length(),
                          info.max_weight())
        lengths = {(name, doc): reader.doc_field_length(doc, name)
                   for name, field in schema.items() if field.scorable for doc in docs}
        columns = {name: [reader.column_reader(name)[doc] for doc in docs]
                   for name, field in schema.items() if field.column_type and reader.has_column(name)}
        stored = [reader.stored_fields(doc) for doc in docs]
    return {"terms": terms, "lengths": lengths, "columns": columns, "stored": stored}


def whooshs_own(monkeypatch: Any) -> None:
    monkeypatch.setattr(whoosh.writing, "PostingPool", postings.WHOOSH_POSTING_POOL)
    monkeypatch.setattr(SegmentWriter, "add_document", postings.WHOOSH_ADD_DOCUMENT)
    monkeypatch.setattr(SegmentWriter, "_flush_segment", whoosh_seam.WHOOSH_FLUSH_SEGMENT)


def generated_vault(root: Path, count: int, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)] + [w for w in _TRICKY if w.strip()] + ["Word", "WORD", "word"]
    notes = {}
    for i in range(count):
        body_words = rng.choices(words, k=rng.randint(0, 120))
        if i % 17 == 0:
            body_words += ["often"] * 300  # a frequency past the small ones made once
        tags = " ".join(f"#t{rng.randint(0, 9)}/sub{rng.randint(0, 3)}" for _ in range(rng.randint(0, 3)))
        links = " ".join(f"[[n{rng.randint(0, count)}]]" for _ in range(rng.randint(0, 3)))
        title = "" if i % 11 == 0 else f"title: {rng.choice(words)} {i}\n"
        aliases = f"aliases: [{rng.choice(words)!r}, A{i}]\n" if i % 3 == 0 else ""
        notes[f"d{i % 4}/sub{i % 3}/n{i}.md"] = (f"---\n{title}{aliases}importance: 0.{i % 10}\n---\n"
                                                 f"{' '.join(body_words)}\n{tags}\n{links}\n")
    write_notes(root, notes)
    return notes


def write_segment(root: Path, folder: Path, rels: list[str], limitmb: float = 64) -> None:
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), make_schema())
    writer = SegmentWriter(ix, limitmb=limitmb)
    for rel in rels:
        writer.add_document(**document_of(read_note(root, rel, config=CONFIG), rel, CONFIG.record_head_chars))
    writer.commit()


def test_a_segment_written_here_holds_exactly_what_whoosh_writes(tmp_path: Path, monkeypatch: Any) -> None:
    rels = sorted(generated_vault(tmp_path / "v", 160, seed=3))
    write_segment(tmp_path / "v", tmp_path / "ours", rels)
    spilled = tmp_path / "spilled"  # a tiny memory limit: hundreds of sorted runs, merged first
    write_segment(tmp_path / "v", spilled, rels, limitmb=0.002)
    with monkeypatch.context() as m:
        whooshs_own(m)
        write_segment(tmp_path / "v", tmp_path / "whoosh", rels)
    want = segment_content(tmp_path / "whoosh")
    assert segment_content(tmp_path / "ours") == want
    assert segment_content(spilled) == want
    assert any(stats[1] > 128 for stats in want["terms"].values())  # over one block of postings
    assert any(any(w > 255 for _, w, _ in stats[0]) for stats in want["terms"].values())


def test_terms_of_few_postings_keep_them_in_their_term_info_and_read_back_as_whooshs(tmp_path: Path,
                                                                                     monkeypatch: Any) -> None:
    """Patch 9: a term of at most INLINE_POSTINGS postings is inlined (no block in the postings
    file), a longer one is not; both read back as Whoosh's own segment holds them, through the
    matcher (segment_content) and through the one-piece decoder of whoosh_files."""
    from vault_mem.search.whoosh.files import postings as term_postings

    rels = sorted(generated_vault(tmp_path / "v", 40, seed=5))
    write_segment(tmp_path / "v", tmp_path / "ours", rels)
    with monkeypatch.context() as m:
        whooshs_own(m)
        write_segment(tmp_path / "v", tmp_path / "whoosh", rels)
    assert segment_content(tmp_path / "ours") == segment_content(tmp_path / "whoosh")
    inlined = {True: 0, False: 0}
    with whoosh_index.open_dir(str(tmp_path / "ours")).reader() as ours, \
            whoosh_index.open_dir(str(tmp_path / "whoosh")).reader() as theirs:
        for field, tbytes in ours.all_terms():
            info = ours.term_info(field, tbytes)
            assert info.is_inlined() == (info.doc_frequency() <= whoosh_parts.SIZES.inline_postings)
            assert not theirs.term_info(field, tbytes).is_inlined()  # Whoosh's writer never inlines
            inlined[info.is_inlined()] += 1
            if field == "body":
                term = tbytes.decode("utf-8")
                assert list(term_postings(ours, field, term)) == list(term_postings(theirs, field, term))
    assert inlined[True] > 100 and inlined[False] > 10, inlined


def test_the_patches_work_by_the_sizes_they_are_installed_with(tmp_path: Path) -> None:
    """The sizes of the Whoosh patches are the process's, given with the install by its composition
    root (docs/settings.md): a term keeps at most ``inline_postings`` postings in its term info, a run
    file is pickled ``run_chunk`` postings at a time, and the process keeps the tables of contents of
    the latest ``tocs_kept`` generations; the process's settings, changed later, do not steer them."""
    from vault_mem import settings as vm_settings
    from vault_mem.search.whoosh import patches

    rels = sorted(generated_vault(tmp_path / "v", 40, seed=5))
    try:
        patches.install(dataclasses.replace(CONFIG, inline_postings=1, run_chunk=3, tocs_kept=2))
        with vm_settings.use(CONFIG):  # not read by the patches
            write_segment(tmp_path / "v", tmp_path / "ix", rels)
            with whoosh_index.open_dir(str(tmp_path / "ix")).reader() as reader:
                infos = [reader.term_info(*key) for key in reader.all_terms()]
            assert all(info.is_inlined() == (info.doc_frequency() == 1) for info in infos)
            assert any(1 < info.doc_frequency() <= CONFIG.inline_postings for info in infos)
            writer = SegmentWriter(whoosh_index.open_dir(str(tmp_path / "ix")))
            pool = writer.pool
            for n in range(10):
                pool.add(("body", b"t%d" % n, 0, 1.0, b""))
            pool.save()
            run = pool._open_run(pool.runs[0])
            chunks = []
            with contextlib.suppress(EOFError):
                while True:
                    chunks.append(len(pickle.load(run)))
            run.close()
            writer.cancel()
            assert chunks == [3, 3, 3, 1]
            for n in range(4):
                folder = tmp_path / f"toc{n}"
                folder.mkdir()
                schema = whoosh_index.create_in(str(folder), make_schema()).schema
                whoosh_index.open_dir(str(folder), schema=schema)  # its table of contents kept
            assert len(whoosh_parts._tocs) == 2
    finally:
        patches.install(CONFIG)
    assert whoosh_parts.Sizes.of(CONFIG) == whoosh_parts.SIZES and postings.TermPool.run_chunk == CONFIG.run_chunk


def test_a_merge_through_the_term_pool_holds_exactly_what_whooshs_pool_merges(tmp_path: Path,
                                                                                monkeypatch: Any) -> None:
    """Merges add postings one at a time from the segments they read (``add_reader``)."""
    rels = sorted(generated_vault(tmp_path / "v", 90, seed=5))

    def merged(folder: Path) -> dict[str, Any]:
        folder.mkdir()
        ix = whoosh_index.create_in(str(folder), make_schema())
        for part in (rels[:40], rels[40:70], rels[70:]):
            with ix.writer() as w:
                w.mergetype = whoosh.writing.NO_MERGE
                for rel in part:
                    w.add_document(**document_of(read_note(tmp_path / "v", rel, config=CONFIG), rel,
                                                 CONFIG.record_head_chars))
        with ix.writer() as w:
            w.delete_by_term("path", rels[3])  # a deleted document is dropped, the rest renumbered
            w.mergetype = whoosh.writing.OPTIMIZE
        return segment_content(folder)

    ours = merged(tmp_path / "ours")
    with monkeypatch.context() as m:
        whooshs_own(m)
        want = merged(tmp_path / "whoosh")
    assert ours == want
    assert len(want["stored"]) == len(rels) - 1


def test_postings_out_of_document_order_are_sorted_as_whoosh_sorts_them(tmp_path: Path) -> None:
    ix = whoosh_index.create_in(str(tmp_path), make_schema())
    writer = SegmentWriter(ix)
    pool = writer.pool
    assert isinstance(pool, postings.TermPool)
    added = [("body", b"b", 5, 1.0, b"x"), ("body", b"a", 2, 2.0, b"y"), ("body", b"b", 1, 1.0, b"z"),
             ("body", b"b", 5, 0.5, b"w"), ("body", b"a", 2, 1.0, b"v"), ("tags", b"t", 0, 1.0, b"")]
    for item in added:
        pool.add(item)
    assert list(pool.items()) == sorted(added)
    writer.cancel()


def test_a_live_commits_segment_is_made_in_memory_and_written_as_one_packed_file(tmp_path: Path,
                                                                                 monkeypatch: Any) -> None:
    """Patch 10: a writer made inside parts_in_memory creates no file in the index folder but its
    packed segment (and the table of contents), and the segment holds what one written on disk
    holds; a writer made outside it still writes its parts there."""
    from whoosh.filedb.filestore import FileStorage

    rels = sorted(generated_vault(tmp_path / "v", 30, seed=7))
    write_segment(tmp_path / "v", tmp_path / "disk", rels)
    created: list[tuple[str, str]] = []
    real = FileStorage.create_file

    def create_file(self: FileStorage, name: str, **kwargs: Any) -> Any:
        created.append((str(self.folder), name))
        return real(self, name, **kwargs)

    monkeypatch.setattr(FileStorage, "create_file", create_file)
    for in_memory in (True, False):
        folder = tmp_path / f"live-{in_memory}"
        folder.mkdir()
        ix = whoosh_index.create_in(str(folder), make_schema())
        created.clear()
        if in_memory:
            with whoosh_parts.parts_in_memory():
                writer = SegmentWriter(ix)
        else:
            writer = SegmentWriter(ix)
        for rel in rels:
            writer.add_document(**document_of(read_note(tmp_path / "v", rel, config=CONFIG), rel,
                                              CONFIG.record_head_chars))
        writer.commit()
        # the table of contents is "_MAIN_<generation>.toc", made under a temp name and renamed
        made = [name for where, name in created if where == str(folder) and not name.startswith("_")]
        assert (len(made) == 1 and made[0].endswith(".seg")) == in_memory, made
        assert segment_content(folder) == segment_content(tmp_path / "disk")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1e6, width=32), st.integers(0, 200_000), st.binary(max_size=6)),
                min_size=1, max_size=whoosh_parts.SIZES.inline_postings),
       st.integers(0, 2**31), st.booleans())
def test_an_inlined_term_info_is_the_bytes_whooshs_term_info_makes(postings: list[tuple[float, int, bytes]],
                                                                   first: int, with_values: bool) -> None:
    """``inline_info`` builds a whoosh3 term info's bytes itself: they must be what Whoosh's own
    ``W3TermInfo`` makes of one block of the same postings (its weights as 32-bit floats, its
    lengths above 0 only), with and without values, and read back the same."""
    from array import array

    from whoosh.codec.whoosh3 import W3TermInfo

    ids = [first + 3 * i for i in range(len(postings))]
    weights = tuple(array("f", [w for w, _, _ in postings]))
    values = tuple(v for _, _, v in postings) if with_values else (None,) * len(ids)
    lengths = [n for _, n, _ in postings if n]

    class Block:  # what add_block reads of a postings block
        def __len__(self) -> int:
            return len(ids)

        def min_id(self) -> int:
            return ids[0]

        def max_id(self) -> int:
            return ids[-1]

        def max_weight(self) -> float:
            return max(weights)

        def min_length(self) -> int | None:
            return min(lengths) if lengths else None

        def max_length(self) -> int:
            return max(lengths, default=0)

        _weights = weights

    info = W3TermInfo()
    info.add_block(Block())
    info.set_inlined(ids, weights, values)
    made = whoosh_parts.inline_info(ids, weights, values, lengths)
    assert made == info.to_bytes()
    back = W3TermInfo.from_bytes(made)
    assert back.inlined_postings() == (tuple(ids), weights, values)
    assert (back.doc_frequency(), back.max_id(), back.min_id()) == (len(ids), ids[-1], ids[0])
