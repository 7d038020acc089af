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


class CallsCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[
            _Key, tuple[Problem, tuple[TestCase, ...], tuple[CaseArgs, ...]]
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
        with self._lock:
            self._entries[key] = (problem, tuple(cases), calls)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return calls

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


# A few test sets per problem are live at once (the current version, an assignment's
# personal sets, "Run examples"'s public part).
CALLS = CallsCache(size=128)
