"""Values made from objects, kept by the identity of those objects.

The host reuses one object per case of a test set, run after run, so what is derived from it
(the run's calls, a case's encoded section) can be kept by ``id``. An entry holds its objects,
so their ids cannot be reused by others while it lives; new objects (a new test set version, a
reloaded problem) are new entries, never a stale one. Least recently used entries go first,
bounded by count and by bytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class IdentityCache(Generic[Value]):
    def __init__(self, max_entries: int, max_bytes: int, size: Callable[[Value], int]) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size = size
        self._lock = threading.Lock()
        self._bytes = 0
        self._entries: OrderedDict[
            tuple[int, ...], tuple[tuple[object, ...], Hashable, Value, int]
        ] = OrderedDict()

    def get(self, objects: tuple[object, ...], extra: Hashable, make: Callable[[], Value]) -> Value:
        """``make()``, made once for these very ``objects`` (and an equal ``extra``)."""
        key = tuple(map(id, objects))
        with self._lock:
            entry = self._entries.get(key)
            if (
                entry is not None
                and all(a is b for a, b in zip(entry[0], objects, strict=True))
                and entry[1] == extra
            ):
                self._entries.move_to_end(key)
                return entry[2]
        value = make()
        size = self._size(value)
        if size > self.max_bytes:
            return value
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[3]
            while self._entries and (
                len(self._entries) >= self.max_entries or self._bytes + size > self.max_bytes
            ):
                self._bytes -= self._entries.popitem(last=False)[1][3]
            self._entries[key] = (objects, extra, value, size)
            self._bytes += size
        return value

    def held_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
