"""Patches to Whoosh, applied once when the index layer is imported (before any writer exists).

1. Unique names. Whoosh names segments and temp files with the ``random`` module, which a
   program (or a test framework such as Hypothesis) may reseed: two writers then draw the
   same segment name and the second commit fails, or worse, overwrites a live segment.
   Names come from the operating system's randomness instead.

2. Deleting a file that is still open elsewhere. Windows refuses to delete a file another
   process holds open (a reader in the second server maps every segment it searches; a
   virus scanner or the search indexer opens new files for a moment): PermissionError.
   Whoosh deletes files while it commits (the loose files of a segment it has just packed
   into one compound ``.seg``, old segments and tables of contents, its temp folder), so
   one such error failed the commit after the new table of contents was written, and left
   the writer's lock held. Here a deletion refused that way is skipped (logged), never
   raised, and retried at a later commit: Whoosh's ``clean_files`` already retries old
   segments and tables of contents at every commit, and the loose files left beside a
   packed segment are swept there too. The commit itself never fails on cleaning up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from typing import Any

import whoosh.codec.base
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.index
import whoosh.util
import whoosh.writing
from whoosh.filedb.filestore import FileStorage

log = logging.getLogger("vault_mem.index")
_IDCHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


def unique_name(size: int = 28) -> str:
    return "".join(secrets.choice(_IDCHARS) for _ in range(size))


for _module in (whoosh.util, whoosh.codec.base, whoosh.filedb.compound, whoosh.filedb.filestore, whoosh.writing):
    _module.random_name = unique_name


_delete_file = FileStorage.delete_file
_clean_files = whoosh.index.clean_files


def delete_when_free(self: FileStorage, name: str) -> None:
    """Delete ``name``; a file held open elsewhere (PermissionError) stays for a later commit."""
    try:
        _delete_file(self, name)
    except FileNotFoundError:
        pass  # already gone: what was asked
    except PermissionError as exc:
        log.debug("index file %s is in use elsewhere; deleting it at a later commit (%s)", name, exc)


def destroy_when_free(self: FileStorage) -> None:
    """Remove a writer's temp folder, leaving what is held open elsewhere (swept by a later writer)."""
    self.clean(ignore=True)
    try:
        os.rmdir(self.folder)
    except OSError as exc:  # not empty (a file still in use) or gone already
        log.debug("temp folder %s not removed now (%s)", self.folder, exc)


def clean_files_and_leftovers(storage: Any, indexname: str, gen: int, segments: list[Any]) -> None:
    """Whoosh's cleanup of unused files, plus the loose files left beside a packed (compound)
    segment when deleting them was refused at the commit that packed it."""
    _clean_files(storage, indexname, gen, segments)
    packed = {s.segment_id(): s.make_filename(s.COMPOUND_EXT) for s in segments if s.is_compound()}
    if not packed:
        return
    pattern = whoosh.index.TOC._segment_pattern(indexname)
    with contextlib.suppress(OSError):
        for filename in list(storage):
            match = pattern.match(filename)
            if match and match.group(1) in packed and filename != packed[match.group(1)]:
                with contextlib.suppress(OSError):
                    storage.delete_file(filename)


FileStorage.delete_file = delete_when_free
FileStorage.destroy = destroy_when_free
whoosh.index.clean_files = clean_files_and_leftovers
