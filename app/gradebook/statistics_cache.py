"""Statistics computed once per state of what they are computed from, per (assignment,
problem): a read whose inputs have not changed since the last one is answered from memory.

The key is read from the database on every request, not kept by whoever writes: it is made of
what the figures depend on, so no write path (a grading, a regrade, an adjustment, a changed
policy, an override, a roster change, an account deleted) can forget to invalidate it, and
several API processes each keep their own cache over the same database without telling each
other anything. What it holds:

- the assignment's settings, its problems (points, titles), the course's students (section,
  status) and the overrides: small rows, read in full;
- per problem, an aggregate over the graded attempts: how many, how many done, the sum of
  their runs (a regrade adds one) and the newest finish (every grading writes one); how many
  arrived in the last 7 and 14 days (the weekly comparison moves when one ages out);
- per problem, the number and the newest id of the adjustments (an append-only log);
- the reader's cut (``service.cut_for``) and the section asked for.

The key is read before the figures, so what is stored under it is never older than it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.assignments.models import Assignment, Override
from app.gradebook.models import GradeAdjustment
from app.gradebook.schemas import ProblemStatistics
from app.gradebook.scores import ProblemInfo, Student
from app.gradebook.statistics import WEEK
from app.submissions.models import Submission

# Entries kept per process: a few assignments' problems and sections (each a few kB).
SIZE = 512

Slot = tuple[int, str | None, str]  # assignment, section, problem


class StatisticsCache:
    """A bounded LRU of each slot's last figures with the key they were computed under."""

    def __init__(self, size: int = SIZE) -> None:
        self._size = size
        self._entries: OrderedDict[Slot, tuple[Hashable, ProblemStatistics]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, slot: Slot, key: Hashable) -> ProblemStatistics | None:
        with self._lock:
            found = self._entries.get(slot)
            if found is None or found[0] != key:
                return None
            self._entries.move_to_end(slot)
            return found[1]

    def put(self, slot: Slot, key: Hashable, value: ProblemStatistics) -> None:
        with self._lock:
            self._entries[slot] = (key, value)
            self._entries.move_to_end(slot)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


# One cache per database handle (the app's sessionmaker): two apps in one process (the test
# suite) never see each other's entries, whatever their ids.
_CACHES: weakref.WeakKeyDictionary[object, StatisticsCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(owner: object) -> StatisticsCache:
    with _CACHES_LOCK:
        cache = _CACHES.get(owner)
        if cache is None:
            cache = _CACHES[owner] = StatisticsCache()
        return cache


def problem_keys(
    session: Session,
    assignment: Assignment,
    problems: Sequence[ProblemInfo],
    students: Sequence[Student],
    overrides: Sequence[Override],
    cut: set[str],
    now: datetime,
) -> dict[str, Hashable]:
    """Each problem's key (see the module's docstring)."""
    settings = tuple(getattr(assignment, column.key) for column in Assignment.__table__.columns)
    grants = tuple(
        sorted((o.id, o.user_id, o.section, o.until, o.credit, o.extra_attempts) for o in overrides)
    )
    shared = (settings, tuple(problems), tuple(students), grants)
    s = Submission
    received = func.coalesce(s.received_at, s.created_at)
    attempts = {
        row[0]: tuple(row[1:])
        for row in session.execute(
            select(
                s.problem_id,
                func.count(),
                func.count(case((s.status == "done", 1))),
                func.sum(s.run),
                func.max(s.finished_at),
                func.count(case((received >= now - WEEK, 1))),
                func.count(case((received >= now - 2 * WEEK, 1))),
            )
            .where(s.assignment_id == assignment.id, s.graded_attempt.is_not(None))
            .group_by(s.problem_id)
        )
    }
    g = GradeAdjustment
    adjustments = {
        row[0]: tuple(row[1:])
        for row in session.execute(
            select(g.problem_id, func.count(), func.max(g.id))
            .where(g.assignment_id == assignment.id)
            .group_by(g.problem_id)
        )
    }
    return {
        p.problem_id: (
            shared,
            attempts.get(p.problem_id),
            adjustments.get(p.problem_id),
            p.problem_id in cut,
        )
        for p in problems
    }
