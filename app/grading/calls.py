"""The calls of a run (``CaseArgs``), built once per test set and reused by every run on it.

Every submission on a problem runs the same test set, so its calls are the same objects run
after run: the sandbox's host side encodes each call's inputs once for them
(``sandbox.wire.SECTIONS``) instead of once per run. Entries are keyed by the identity of the
problem and of every case (``IdentityCache``): a new test set version (an instructor's case
added or removed) or a reloaded problem (a changed reference, changed probes) are new objects,
hence new calls, never a stale one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sandbox.identity_cache import IdentityCache
from sandbox.protocol import CaseArgs


def _nbytes(calls: tuple[CaseArgs, ...]) -> int:
    return sum(getattr(v, "nbytes", 0) for call in calls for v in call.args.values())


# A few test sets per problem are live at once (the current version, an assignment's personal
# sets, "Run examples"'s public part). An entry holds its cases alive: bounded by their bytes
# too, as the encoded sections are.
CALLS: IdentityCache[tuple[CaseArgs, ...]] = IdentityCache(
    max_entries=128, max_bytes=64 << 20, size=_nbytes
)


def calls_of(
    problem: object, cases: Sequence[object], build: Callable[[], Sequence[CaseArgs]]
) -> tuple[CaseArgs, ...]:
    """The calls ``build()`` makes for ``problem`` and ``cases``, built on the first run of
    these very objects."""
    return CALLS.get((problem, *cases), None, lambda: tuple(build()))
