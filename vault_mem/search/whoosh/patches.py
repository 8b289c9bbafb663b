"""The Whoosh patches, installed by one explicit call; the speed patches switchable one by one.

Each patch replaces some Whoosh attributes with vault-mem's versions (``seam.py`` says what
each one does). Two are fixes of Whoosh bugs and always go in: unique names (Whoosh draws
segment names from ``random``, which a program or a test framework may reseed: two writers then
draw the same name and a commit fails) and deleting a file held open elsewhere (Windows refuses,
and Whoosh's commit then failed half-way). The others are speed and memory, never meaning: with
every one of them off, Whoosh's own code runs and the answers are byte for byte the same
(``bench/answers_check.py``; CI runs a part of the suite that way). The command line installs
them once at start (``vault_mem/cli``), a build worker and a merge process likewise, each
honouring ``VAULT_MEM_WHOOSH_PATCHES`` (docs/index-and-scale.md, "Whoosh patches").

The sizes the patches work by (``inline_postings``, ``tocs_kept``, ``run_chunk``) come with the
install: Whoosh calls the patches with no index at hand, so they are the process's, taken from the
settings the installing composition root gives, not from any one index's settings; a later install
changes them for every index of the process (docs/settings.md, "Where settings are read").

    install(config, off)  the fixes, and every speed patch not named in ``off``; those named removed
    installed()           the names of the patches in place now
    FIXES, PATCHES        the names, in seam.py's numbering
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import whoosh.codec.base
import whoosh.codec.whoosh3
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.filedb.filetables
import whoosh.filedb.structfile
import whoosh.index
import whoosh.util
import whoosh.writing
from whoosh.filedb.filestore import FileStorage, RamStorage
from whoosh.system import _INT_SIZE

from vault_mem.search.whoosh import parts, seam
from vault_mem.search.whoosh.mapping import hash_reader_init
from vault_mem.search.whoosh.postings import TermPool
from vault_mem.search.whoosh.postings import add_document as postings_add_document
from vault_mem.settings import Settings

ENVIRONMENT = "VAULT_MEM_WHOOSH_PATCHES"  # "all" (the default), "none", or "-name,-name": speed patches left out

Target = tuple[Any, str, Any]  # (owner, attribute, vault-mem's value)


@dataclass(frozen=True)
class Patch:
    name: str
    numbers: tuple[int, ...]  # as seam.py's docstring numbers them
    targets: tuple[Target, ...]


def _codec_targets() -> tuple[Target, ...]:
    codec = whoosh.codec.whoosh3.W3Codec
    return (*((codec, n, parts.parts_writer(getattr(codec, n))) for n in ("per_document_writer", "field_writer")),
            *((codec, n, parts.parts_reader(getattr(codec, n))) for n in ("per_document_reader", "terms_reader")),
            (whoosh.codec.base.Segment, "create_compound_file", parts.assemble_parts))


_ORIGINAL: dict[tuple[Any, str], Any] = {}  # (owner, attribute) -> Whoosh's own value, kept at first install
_lock = threading.Lock()


@functools.cache
def _patches() -> tuple[Patch, ...]:
    tables = whoosh.filedb.filetables
    return (
        Patch("unique-names", (1,), tuple((m, "random_name", seam.unique_name) for m in (
            whoosh.util, whoosh.codec.base, whoosh.filedb.compound, whoosh.filedb.filestore, whoosh.writing))),
        Patch("delete-when-free", (2,), ((FileStorage, "delete_file", seam.delete_when_free),
                                         (FileStorage, "destroy", seam.destroy_when_free),
                                         (whoosh.index, "clean_files", seam.clean_files_and_leftovers))),
        Patch("shared-mappings", (3,), ((whoosh.filedb.structfile.BufferFile, "__init__", seam.buffer_file_init),
                                        (whoosh.codec.base.Segment, "open_compound_file",
                                         seam.open_shared_compound_file))),
        Patch("missing-columns", (4,), ((whoosh.codec.whoosh3.W3PerDocReader, "_cached_reader",
                                         seam.cached_reader),)),
        # The pool's postings are written by patch 6's flush: switching that off switches this off too.
        Patch("postings", (5, 7, 9), ((whoosh.writing, "PostingPool", TermPool),
                                      (whoosh.writing.SegmentWriter, "add_document", postings_add_document))),
        Patch("field-lengths", (6,), ((whoosh.writing.SegmentWriter, "_flush_segment", seam.flush_segment),)),
        Patch("hash-directory", (8,), ((tables.HashReader, "__init__", hash_reader_init(
            tables._hash_functions, tables._dir_entry, _INT_SIZE, tables.FileFormatError)),)),
        Patch("parts-in-memory", (10,), _codec_targets()),
        Patch("toc-once", (11,), ((whoosh.index.TOC, "read", classmethod(parts.read_toc)),
                                  (whoosh.index.TOC, "write", parts.write_toc),
                                  (whoosh.writing.SegmentWriter, "__init__", parts.writer_init))),
        Patch("no-writer-cycle", (12,), ((FileStorage, "temp_storage", parts.folder_temp_storage),
                                         (RamStorage, "temp_storage", parts.ram_temp_storage))),
    )


FIXES: tuple[str, ...] = ("unique-names", "delete-when-free")
PATCHES: tuple[str, ...] = ("shared-mappings", "missing-columns", "postings", "field-lengths", "hash-directory",
                            "parts-in-memory", "toc-once", "no-writer-cycle")
_NEEDS = {"postings": "field-lengths"}  # a patch that works only with another in place


def install(config: Settings, off: Collection[str] = ()) -> None:
    """The fixes and every speed patch not named in ``off`` in place, every one named there removed
    (Whoosh's own code back), working by ``config``'s sizes; ValueError naming a name that is no
    speed patch. Safe to call again, from any thread."""
    unknown = sorted(set(off) - set(PATCHES))
    if unknown:
        raise ValueError(f"no Whoosh speed patch is named {', '.join(unknown)}: the names are {', '.join(PATCHES)}")
    left_out = set(off) | {name for name, needed in _NEEDS.items() if needed in off}
    with _lock:
        parts.SIZES = parts.Sizes.of(config)
        TermPool.run_chunk = config.run_chunk
        for patch in _patches():
            for owner, attribute, value in patch.targets:
                key = (owner, attribute)
                if key not in _ORIGINAL:
                    _ORIGINAL[key] = vars(owner).get(attribute, getattr(owner, attribute))
                setattr(owner, attribute, _ORIGINAL[key] if patch.name in left_out else value)


def installed() -> frozenset[str]:
    """The names of the patches in place now."""
    return frozenset(p.name for p in _patches()
                     if all(vars(owner).get(attribute) is value for owner, attribute, value in p.targets))


def left_out_by(setting: str | None) -> frozenset[str]:
    """The patches a ``VAULT_MEM_WHOOSH_PATCHES`` value leaves out: "all" or empty none, "none" every
    one, "-a,-b" those named; ValueError for anything else, naming what is accepted."""
    text = (setting or "").strip().lower()
    if text in ("", "all"):
        return frozenset()
    if text == "none":
        return frozenset(PATCHES)
    names = [part.strip() for part in text.split(",")]
    if not all(name.startswith("-") and name[1:] in PATCHES for name in names):
        raise ValueError(f"{ENVIRONMENT}={setting!r} is not understood: give all, none, or the patches to "
                         f"leave out as -name,-name (names: {', '.join(PATCHES)})")
    return frozenset(name[1:] for name in names)


def install_from_environment(config: Settings) -> frozenset[str]:
    """``install(config)`` as ``VAULT_MEM_WHOOSH_PATCHES`` says; the patches left out."""
    off = left_out_by(os.environ.get(ENVIRONMENT))
    install(config, off)
    return off
