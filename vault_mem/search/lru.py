"""One thread-safe LRU cache for the whole process, bounded in bytes.

It holds what is computed from things that never change: a segment's column or joined
lexicon (segments are immutable once written) and a parsed note keyed by its file's
inode, size and mtime. Every call thread shares it, so a vault's columns are held once,
not once per thread. The bound is the ``cache_mb`` setting (``VAULT_MEM_CACHE_MB``, default 192 MB), given
by the process's composition root (``size_cache``: the command line, a build worker, the background merge);
a value larger than a quarter of it is computed and returned but not kept. One cache for the process, so
one size: every index the process opens shares it (docs/settings.md, "Where settings are read").
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from vault_mem.settings import Settings

V = TypeVar("V")


def approx_size(value: Any) -> int:
    """Bytes a cached value holds, roughly: containers and their str/bytes/int items."""
    size = sys.getsizeof(value)
    if isinstance(value, list | tuple):
        getsize = sys.getsizeof
        shared_small = (int, float, type(None), bool)
        size += sum(getsize(item) for item in value if not isinstance(item, shared_small) or
                    (isinstance(item, int) and not -5 <= item <= 256))
    return size


def megabytes(cache_mb: float) -> int:
    """The bytes of a ``cache_mb`` setting (a number under 1 counts as 1)."""
    return int(max(cache_mb, 1) * 2**20)


class Lru:
    def __init__(self, max_bytes: int) -> None:
        """A bound of ``max_bytes`` (``resize`` changes it)."""
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def resize(self, max_bytes: int) -> None:
        """Bound the cache at ``max_bytes`` from now on, dropping the least recently used past it."""
        with self._lock:
            self.max_bytes = max_bytes
            self._drop_past(max_bytes)

    def _drop_past(self, bound: int) -> None:
        while self.bytes > bound and self._items:
            _key, (_value, dropped) = self._items.popitem(last=False)
            self.bytes -= dropped

    def get_or_make(self, key: Hashable, make: Callable[[], V], sizeof: Callable[[V], int] = approx_size) -> V:
        """The cached value of ``key``, or ``make()`` (computed outside the lock) cached."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                value: V = hit[0]
                return value
        value = make()
        size = sizeof(value)
        if size > self.max_bytes // 4:
            return value
        with self._lock:
            raced = self._items.get(key)
            if raced is not None:  # another thread made it meanwhile: every caller shares that one
                self._items.move_to_end(key)
                first: V = raced[0]
                return first
            self._items[key] = (value, size)
            self.bytes += size
            self._drop_past(self.max_bytes)
        return value

    def peek(self, key: Hashable) -> Any:
        """The cached value of ``key``, or None; makes nothing."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            self._items.move_to_end(key)
            return hit[0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


CACHE = Lru(megabytes(Settings().cache_mb))  # the default size until the composition root gives its own


def size_cache(cache_mb: float) -> None:
    """Bound the process's one cache at ``cache_mb`` megabytes (the ``cache_mb`` setting): called once
    by each composition root, with its settings, before anything is cached."""
    CACHE.resize(megabytes(cache_mb))


def cached_while_unchanged(key: Hashable, make: Callable[[], tuple[V, bool]],
                           sizeof: Callable[[V], int] = approx_size) -> V:
    """What ``make()`` derives from one version of a file, cached under ``key`` (which names that
    version: path and ``version_key``); ``make`` also says whether its value may be cached (a read
    that failed is not)."""
    cached: V | None = CACHE.peek(key)
    if cached is not None:
        return cached
    value, cacheable = make()
    return CACHE.get_or_make(key, lambda: value, sizeof) if cacheable else value
