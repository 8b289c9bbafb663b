"""A file object over a memoryview that never copies the whole buffer: what the Whoosh seam
(``whoosh_seam.py``, patch 3) reads a memory-mapped segment's parts through, where Whoosh
wrapped each part in ``BytesIO``, a private copy per reader."""

from __future__ import annotations


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
