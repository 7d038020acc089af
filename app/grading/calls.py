"""The calls of a run (``CaseArgs``), built once per test set and reused by every run on it.

Every submission on a problem runs the same test set, so its calls are the same objects run
after run: the sandbox's host side encodes each call's inputs once for them
(``sandbox.wire.SECTIONS``) instead of once per run. Entries are keyed by the identity of the
problem and of every case, and hold them, so an id cannot be reused while its entry lives: a new
test set version (an instructor's case added or removed) or a reloaded problem (a changed
reference, changed probes) are new objects, hence new calls, never a stale one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from app.problems.cases import TestCase
from app.problems.loader import Problem
from sandbox.protocol import CaseArgs

_Key = tuple[int, ...]


def _nbytes(calls: Sequence[CaseArgs]) -> int:
    return sum(getattr(v, "nbytes", 0) for call in calls for v in call.args.values())


class CallsCache:
    """At most ``size`` test sets and ``max_bytes`` of their arrays (an entry holds its cases
    alive: personal test sets of a large class, or seed-sized cases, must not pile up)."""

    def __init__(self, size: int, max_bytes: int) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._bytes = 0
        self._entries: OrderedDict[
            _Key, tuple[Problem, tuple[TestCase, ...], tuple[CaseArgs, ...], int]
        ] = OrderedDict()

    def get(
        self,
        problem: Problem,
        cases: Sequence[TestCase],
        build: Callable[[], Sequence[CaseArgs]],
    ) -> tuple[CaseArgs, ...]:
        """The calls ``build()`` makes for ``problem`` and ``cases``, built on the first run of
        these very objects."""
        key = (id(problem), *map(id, cases))
        with self._lock:
            entry = self._entries.get(key)
            if (
                entry is not None
                and entry[0] is problem
                and len(entry[1]) == len(cases)
                and all(a is b for a, b in zip(entry[1], cases, strict=True))
            ):
                self._entries.move_to_end(key)
                return entry[2]
        calls = tuple(build())
        size = _nbytes(calls)
        if size > self.max_bytes:
            return calls
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[3]
            while self._entries and (
                len(self._entries) >= self.size or self._bytes + size > self.max_bytes
            ):
                self._bytes -= self._entries.popitem(last=False)[1][3]
            self._entries[key] = (problem, tuple(cases), calls, size)
            self._bytes += size
        return calls

    def held_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


# A few test sets per problem are live at once (the current version, an assignment's
# personal sets, "Run examples"'s public part); as many bytes as the encoded sections' cache.
CALLS = CallsCache(size=128, max_bytes=64 << 20)
