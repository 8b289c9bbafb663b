"""The Whoosh seam (vault_mem/search/whoosh/): the pinned version and the shape of every
target are checked at import with a clear message; each patch does what its docstring says;
no module outside the seam touches a private Whoosh name.

Patches 2 (deleting files still in use), 5 (the chunked posting pool) and 6 (field lengths
decoded once) are tested where their effects show: tests/integration/test_portable.py and
tests/integration/test_index.py."""

from __future__ import annotations

import ast
import random
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import whoosh.index
import whoosh.writing
from whoosh.fields import ID, TEXT, Schema

from vault_mem.search.whoosh import parts as whoosh_parts
from vault_mem.search.whoosh import seam as whoosh_seam
from vault_mem.search.whoosh.mapping import ViewFile
from vault_mem.search.whoosh.seam import WhooshMismatch, check_shapes, check_version, shape_problems

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "vault_mem"
SEAM = PACKAGE / "search" / "whoosh" / "seam.py"
SEAMS = tuple(sorted((PACKAGE / "search" / "whoosh").glob("*.py")))  # the one folder that knows Whoosh's internals

pytestmark = pytest.mark.usefixtures("whoosh_patches")  # what each patch does, with every patch in place


def test_the_installed_whoosh_is_the_one_pinned_in_pyproject() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert f"whoosh-reloaded=={whoosh_seam.PINNED}" in [d.replace(" ", "") for d in dependencies]
    assert metadata.version("whoosh-reloaded") == whoosh_seam.PINNED


def test_another_whoosh_version_is_refused_with_what_to_install() -> None:
    with pytest.raises(WhooshMismatch) as caught:
        check_version("3.0.0")
    message = str(caught.value)
    assert "3.0.0 is installed" in message
    assert "pip install 'whoosh-reloaded==2.7.5'" in message
    check_version(whoosh_seam.PINNED)  # the pinned one passes


def test_every_target_has_the_shape_the_seam_was_written_for() -> None:
    assert shape_problems() == []


def test_a_target_renamed_or_reshaped_upstream_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # What an upgrade would do: a method gone, one taking other arguments, an attribute no
    # longer set, a module that stopped importing random_name (its patch a silent no-op).
    monkeypatch.delattr(whoosh.writing.SegmentWriter, "_finalize_segment")
    monkeypatch.setattr(whoosh.index.FileIndex, "_read_toc", lambda generation: None)
    monkeypatch.delattr(whoosh.writing, "random_name")
    problems = shape_problems()
    assert problems == [
        "whoosh.writing.random_name is missing",
        "SegmentWriter._finalize_segment is missing",
        "FileIndex._read_toc takes (generation), expected (self, ...)",
    ]
    with pytest.raises(WhooshMismatch, match=r"written for \(2\.7\.5\): .*_finalize_segment is missing"):
        check_shapes(problems)


def test_an_attribute_the_seam_reads_and_upstream_dropped_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(whoosh_seam, "ATTRIBUTES", ((whoosh.writing.SegmentWriter, ("_tempstorage", "_gone")),))
    assert shape_problems() == ["SegmentWriter no longer uses self._gone"]


# -- one test per patch -------------------------------------------------------------------


def _index(folder: Path) -> whoosh.index.FileIndex:
    folder.mkdir()
    return whoosh.index.create_in(str(folder), Schema(path=ID(stored=True, unique=True), body=TEXT(stored=True)))


def test_patch_1_reseeding_random_does_not_repeat_segment_names(tmp_path: Path) -> None:
    ix = _index(tmp_path / "ix")
    for n in range(2):
        random.seed(1234)  # as Hypothesis does before every example
        writer = ix.writer()
        writer.add_document(path=f"n{n}.md", body="same seed")
        writer.commit(merge=False)
    segments = ix._read_toc().segments
    assert len({s.segment_id() for s in segments}) == 2
    with ix.searcher() as searcher:
        assert sorted(f["path"] for f in searcher.all_stored_fields()) == ["n0.md", "n1.md"]


def test_patch_3_every_reader_of_a_segment_shares_one_mapping_and_copies_nothing(tmp_path: Path) -> None:
    ix = _index(tmp_path / "ix")
    with ix.writer() as writer:
        for n in range(50):
            writer.add_document(path=f"n{n}.md", body=f"word{n} common")
    (segment,) = ix._read_toc().segments
    key = (str(tmp_path / "ix"), segment.make_filename(segment.COMPOUND_EXT))
    first, second = ix.searcher(), ix.searcher()
    try:
        entry = whoosh_seam._shared.entries[key]
        assert entry[1] == 2  # two readers, one mapping
        for searcher in (first, second):
            stored = searcher.reader()._perdoc._storage.open_file(segment.make_filename(".pst"))  # a sub-file
            assert isinstance(stored.file, ViewFile)  # a view of the mapping, not a BytesIO copy
            assert len(searcher.search(whoosh.query.Term("body", "word7"))) == 1
            assert searcher.doc_count() == 50
    finally:
        first.close()
        second.close()
    assert key not in whoosh_seam._shared.entries  # the last reader closed the mapping


def test_patch_4_a_missing_length_column_is_asked_for_once(tmp_path: Path) -> None:
    ix = _index(tmp_path / "ix")
    with ix.writer() as writer:
        for n in range(5):
            writer.add_document(path=f"n{n}.md", body="text")
    with ix.searcher() as searcher:
        perdoc = searcher.reader()._perdoc
        asked: list[str] = []
        has_column = perdoc.has_column
        perdoc.has_column = lambda name: asked.append(name) or has_column(name)
        for docnum in range(5):  # an ID field keeps no lengths: no column file to find
            assert perdoc.doc_field_length(docnum, "path") == 0
        assert len(asked) == 1


def test_patch_8_a_hash_file_opens_as_whoosh_opened_it(tmp_path: Path) -> None:
    from whoosh.filedb.filestore import FileStorage
    from whoosh.filedb.filetables import OrderedHashReader, OrderedHashWriter

    storage = FileStorage(str(tmp_path))
    writer = OrderedHashWriter(storage.create_file("terms.trm"))
    items = {f"term{n:05d}".encode(): f"value {n}".encode() * (n % 7) for n in range(3000)}
    for key in sorted(items):
        writer.add(key, items[key])
    writer.close()
    length = storage.file_length("terms.trm")
    ours = OrderedHashReader(storage.open_file("terms.trm"), length)
    whooshs = OrderedHashReader.__new__(OrderedHashReader)
    whoosh_seam.WHOOSH_HASH_READER_INIT(whooshs, storage.open_file("terms.trm"), length)
    try:
        def state(reader: OrderedHashReader) -> dict[str, object]:  # bound methods of its own file aside
            found = {name: value for name, value in vars(reader).items() if name not in ("dbfile", "_get_pos")}
            found["tables"] = list(found["tables"])  # ours reads an entry per lookup (mapping.HashTables)
            return found

        assert state(ours) == state(whooshs)
        assert len(ours.tables) == 256 and "indexbase" in state(ours)
        assert [ours.tables[t] for t in range(256)] == whooshs.tables
        assert dict(ours.items()) == items
        assert [ours[key] for key in list(items)[::97]] == [items[key] for key in list(items)[::97]]
        assert ours.closest_key(b"term01234x") == b"term01235"
    finally:
        ours.close()
        whooshs.close()



# -- no private Whoosh name outside the seam ----------------------------------------------


def _private_whoosh_uses(path: Path) -> list[str]:
    """``x._name`` (x not self/cls), ``getattr(x, "_name")``, ``f(_name=...)`` and imports of
    ``_name`` from ``whoosh.*`` in a module that imports whoosh or lives in index/."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("whoosh"):
            found += [f"line {node.lineno}: imports {a.name} from {node.module}"
                      for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call):
            found += [f"line {node.lineno}: {k.arg}=" for k in node.keywords if k.arg and _private(k.arg)]
            if (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr")
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                    and isinstance(node.args[1].value, str) and _private(node.args[1].value)):
                found.append(f"line {node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return sorted(found, key=lambda use: int(use.split()[1].rstrip(":")))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _touches_whoosh(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.startswith("whoosh") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("whoosh"):
            return True
    return path.parent.name == "search"


def test_patch_11_a_table_of_contents_is_read_once_per_generation_and_a_writer_deletes_in_its_own_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = _index(tmp_path / "ix")
    with ix.writer() as writer:
        for n in range(3):
            writer.add_document(path=f"n{n}.md", body="text")
    read_from_file: list[int] = []
    whooshs = whoosh_parts._read_toc_file

    def counted(*args: object) -> object:
        read_from_file.append(1)
        return whooshs(*args)

    monkeypatch.setattr(whoosh_parts, "_read_toc_file", counted)
    first, second = ix._read_toc(), ix._read_toc()
    assert len(read_from_file) <= 1  # once at most (the writer's commit may have read it already)
    assert [s.segment_id() for s in first.segments] == [s.segment_id() for s in second.segments]
    writer = ix.writer()
    writer.delete_by_term("path", "n0.md")  # marked in the writer's segments until it commits
    assert writer.segments[0].is_deleted(0) and not ix._read_toc().segments[0].is_deleted(0)
    with ix.searcher() as searcher:
        assert searcher.document_number(path="n0.md") == 0  # what the others read is unchanged
    writer.cancel()
    with ix.writer() as writer:  # the next generation is read from its own file
        writer.add_document(path="n9.md", body="more")
    assert ix._read_toc().generation == first.generation + 1
    assert sorted(s.doc_count_all() for s in ix._read_toc().segments) == [1, 3]
    # An index made again in the folder starts its generations again: the same file names,
    # other files, read anew.
    ix = whoosh.index.create_in(str(tmp_path / "ix"), ix.schema)
    with ix.writer() as writer:
        writer.add_document(path="m.md", body="new")
    with ix.writer() as writer:
        writer.add_document(path="m2.md", body="new")
    assert ix._read_toc().generation == first.generation + 1
    assert sorted(s.doc_count_all() for s in ix._read_toc().segments) == [1, 1]


def test_patch_11_the_table_of_contents_written_is_whooshs_byte_for_byte(tmp_path: Path) -> None:
    ix = _index(tmp_path / "ix")
    with ix.writer() as writer:
        writer.add_document(path="n.md", body="text")
    with ix.writer() as writer:
        writer.delete_by_term("path", "n.md")
        writer.add_document(path="m.md", body="text")
    toc = ix._read_toc()
    whoosh_parts._whoosh_write_toc(toc, ix.storage, "WHOOSH")
    toc.write(ix.storage, "OURS")
    toc.write(ix.storage, "AGAIN")  # the schema's pickle made before
    files = [tmp_path / "ix" / f"_{name}_{toc.generation}.toc" for name in ("WHOOSH", "OURS", "AGAIN")]
    assert files[0].read_bytes() == files[1].read_bytes() == files[2].read_bytes()
    again = whoosh.index.TOC.read(ix.storage, "OURS", schema=ix.schema)
    assert [(s.segment_id(), s.deleted_count()) for s in again.segments] == \
        [(s.segment_id(), s.deleted_count()) for s in toc.segments]


# vault-mem's own private names read outside their class, where: ``Snapshot`` keeps its searcher and
# segments private (nothing above the engine reaches them) and hands them to the engine's modules
# through ``searcher_of`` and ``parts_of``.
OWN_PRIVATE = {"search/snapshot.py": {"._searcher", "._parts"}}


def test_no_module_outside_the_seam_uses_a_private_whoosh_name() -> None:
    offenders = [f"{rel} {use}" for p in sorted(PACKAGE.rglob("*.py"))
                 if p not in SEAMS and _touches_whoosh(p) for use in _private_whoosh_uses(p)
                 if use.partition(": ")[2] not in OWN_PRIVATE.get(rel := p.relative_to(PACKAGE).as_posix(), set())]
    assert not offenders, "\n".join(offenders)


def test_the_private_name_check_sees_each_kind_of_use(tmp_path: Path) -> None:
    sample = tmp_path / "search" / "sample.py"
    sample.parent.mkdir()
    sample.write_text("from whoosh.index import _DEF_INDEX_NAME\n"
                      "toc = ix._read_toc()\n"
                      "w = SegmentWriter(ix, _lk=False)\n"
                      "s = getattr(reader, '_storage', None)\n"
                      "self._mine = 1\n", encoding="utf-8")
    assert _private_whoosh_uses(sample) == [
        "line 1: imports _DEF_INDEX_NAME from whoosh.index", "line 2: ._read_toc", "line 3: _lk=",
        "line 4: getattr(..., '_storage')"]


def test_a_renewed_searcher_makes_its_sub_searchers_only_when_whoosh_asks_for_them(make_vault) -> None:
    """``whoosh_parts.LeanSearcher``: the searchers opened after commits (a thread's renewal, the
    one a writer is lent) make no per-segment sub-searcher; Whoosh's own searching, which reads
    them, gets them made then, with the right offsets, and finds what a plain Whoosh searcher
    finds."""
    from conftest import commit_note
    from whoosh.query import Every, Term
    from whoosh.searching import Searcher

    from vault_mem.search.whoosh.parts import LeanSearcher

    vault = make_vault({f"n{i}.md": f"---\nid: n{i}\n---\nbody {'kiwi' if i % 2 else 'plum'}\n" for i in range(6)})
    for i in range(3):  # each commit: one more segment, and each thread's searcher renewed
        commit_note(vault.index, f"later{i}.md", f"---\nid: later{i}\n---\nbody kiwi {i}\n")
    with vault.index.searching() as searcher:
        assert isinstance(searcher, LeanSearcher)
        leaves = searcher.reader().leaf_readers()
        assert len(leaves) > 1
        assert searcher.__dict__["_subsearchers"] is None  # nothing made by the renewal
        plain = Searcher(searcher.reader(), closereader=False)
        for query in (Term("body", "kiwi"), Every()):
            got = [hit["path"] for hit in searcher.search(query, limit=None)]
            assert got == [hit["path"] for hit in plain.search(query, limit=None)] and got
        made = searcher.subsearchers
        assert [offset for _, offset in made] == [offset for _, offset in leaves]
        assert all(sub.reader() is reader for (sub, _), (reader, _) in zip(made, leaves, strict=True))
        assert searcher.leaf_searchers() is made  # made once, then kept


def test_patch_12_a_committed_writer_and_its_lent_searcher_need_no_garbage_collection(make_vault) -> None:
    """Whoosh's ``temp_storage`` kept a caught FileExistsError whose frames held the writer (with
    its postings), and a lent searcher held itself through ``_orig_close``: each commit's writer
    and readers waited for the garbage collector. Reference counting frees them now, for a live
    commit's writer (parts in memory) and for Whoosh's own (parts on disk)."""
    import gc
    import weakref

    from conftest import commit_note

    from vault_mem.search.schema import document_of
    from vault_mem.vault.reader import read_note

    vault = make_vault({"a.md": "---\nid: a\n---\nbody\n"})
    index = vault.index
    commit_note(index, "b.md", "---\nid: b\n---\nfirst\n")  # the temp folders exist from here on
    (index.root / "b.md").write_text("---\nid: b\n---\nsecond\n", encoding="utf-8")
    ix = _index(index.dir.parent / "plain")
    gc.collect()
    gc.disable()
    try:
        writer = index.acquire_writer()
        lent = weakref.ref(writer._searcher)
        writer.update_document(**document_of(read_note(index.root, "b.md", config=index.config), "b.md",
                                             index.config.record_head_chars))
        index.commit_live(writer)
        freed = weakref.ref(writer)
        plain = ix.writer()
        plain.add_document(path="p.md", body="plain whoosh")
        plain.commit(merge=False)
        plain_freed = weakref.ref(plain)
        del writer, plain
        assert (freed(), lent(), plain_freed()) == (None, None, None)
    finally:
        gc.enable()
    with index.searching() as searcher:
        assert [f["path"] for f in searcher.documents(path="b.md")] == ["b.md"]
