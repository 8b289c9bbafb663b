"""One mapping per segment file, read without copies: the plain parts of the Whoosh seam's
patches 3 and 8 (``whoosh_seam.py``), which name nothing of Whoosh. ``ViewFile`` is what a mapped
segment's parts are read through, where Whoosh wrapped each part in ``BytesIO`` (a private copy
per reader); ``SharedFiles`` hands every reader of a segment file the one open mapping."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

HASH_TABLES = 256  # a Whoosh hash file's directory: (position, slots) of each of 256 tables


class ViewFile:
    """A read-only binary file over a memoryview: reads copy only what they return."""

    def __init__(self, buf: memoryview) -> None:
        self._buf = buf
        self._pos = 0

    def _end(self, size: int | None) -> int:
        return len(self._buf) if size is None or size < 0 else min(len(self._buf), self._pos + size)

    def read(self, size: int | None = -1) -> bytes:
        end = self._end(size)
        data = bytes(self._buf[self._pos:end])
        self._pos = max(self._pos, end)
        return data

    def readinto(self, target: bytearray | memoryview) -> int:
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        end = self._end(size)
        found = bytes(self._buf[self._pos:end]).find(b"\n")
        return self.read(end - self._pos if found < 0 else found + 1)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, len(self._buf))[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._buf = memoryview(b"")

    def flush(self) -> None:
        pass


class SharedHandle:
    """One reader's handle on a file opened once for the whole process (see ``SharedFiles``)."""

    def __init__(self, owner: SharedFiles, key: tuple[str, str], inner: Any) -> None:
        self._owner = owner
        self._key = key
        self._inner = inner
        self.is_closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        if self._owner.release(self._key, self._inner):
            with contextlib.suppress(Exception):
                self._inner.close()


class SharedFiles:
    """Files opened once and shared by every handle: closed when the last handle closes."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], list[Any]] = {}  # key -> [the open file, handles open]
        self._lock = threading.Lock()

    def open(self, key: tuple[str, str], opener: Callable[[], Any]) -> SharedHandle:
        with self._lock:
            entry = self.entries.get(key)
            if entry is None:
                entry = self.entries[key] = [opener(), 0]
            entry[1] += 1
            return SharedHandle(self, key, entry[0])

    def release(self, key: tuple[str, str], inner: Any) -> bool:
        """Count one handle of ``key`` closed; True when it was the last (the caller closes ``inner``)."""
        with self._lock:
            entry = self.entries.get(key)
            if entry is None or entry[0] is not inner:
                return False
            entry[1] -= 1
            if entry[1] > 0:
                return False
            del self.entries[key]
            return True


def hash_reader_init(hash_functions: tuple[Any, ...], entry: Any, int_size: int,
                     format_error: type[Exception]) -> Callable[..., None]:
    """Whoosh's ``HashReader.__init__`` with the directory of hash tables read in one read, where
    Whoosh read each table's entry on its own (patch 8): most of opening a segment, which every
    thread's searcher does after every commit. Given the hash file's layout from the seam."""

    def init(self: Any, dbfile: Any, length: int | None = None, magic: bytes = b"HSH3",
             startoffset: int = 0) -> None:
        self.dbfile = dbfile
        self.startoffset = startoffset
        self.is_closed = False
        if length is None:
            dbfile.seek(0, 2)
            length = dbfile.tell() - startoffset
        dbfile.seek(startoffset)
        filemagic = dbfile.read(4)
        if filemagic != magic:
            raise format_error(f"Unknown file header {filemagic!r}")
        self.hashtype = dbfile.read_byte()
        self.hashfn = hash_functions[self.hashtype]
        dbfile.read_int()  # two ints reserved for future use
        dbfile.read_int()
        self.startofdata = dbfile.tell()
        exptr = startoffset + length - int_size
        expos = exptr - dbfile.get_int(exptr)  # the file ends with the length of the extras
        dbfile.seek(expos)
        self._read_extras()
        size = HASH_TABLES * entry.size
        self.tables = HashTables(entry, dbfile.get(expos - size, size))
        self.endofdata = self.tables[0][0]

    return init


class HashTables:
    """A hash file's directory, (position, slots) of each table, read one entry per lookup: a
    reader opened for a new segment makes a few lookups, and every thread opens each new segment
    after a commit. Unpacking all 256 entries up front showed in the writing worker's profile
    under load (docs/perf/whoosh-patches.md)."""

    __slots__ = ("_data", "_entry")

    def __init__(self, entry: Any, data: bytes) -> None:
        self._entry = entry
        self._data = data

    def __getitem__(self, table: int) -> tuple[int, int]:
        found: tuple[int, int] = self._entry.unpack_from(self._data, table * self._entry.size)
        return found

    def __len__(self) -> int:
        return HASH_TABLES

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._entry.iter_unpack(self._data))
