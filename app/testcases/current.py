"""The test set a submission is graded on: the problem folder's cases plus the stored ones of
its scope (the catalog's, and its course's for a submission in a course's assignment).
"Run examples" (``mode: "examples"``) runs the public part of the same set.

Called by the grader (``app.worker.grader``, through ``app.assignments.cases``) for every graded
submission. Decoded sets are kept per (problem, version, course) in the process, so a worker
reads one small row per grading and decodes arrays only when the set changed.
"""

from __future__ import annotations

import threading

from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from app.problems.cases import TestCase
from app.problems.loader import Problem
from app.testcases.repository import CaseRepository
from app.testcases.service import to_test_case

_CACHE_SIZE = 32
_cache: dict[tuple[URL, str, int, int | None], tuple[Problem, tuple[TestCase, ...]]] = {}
_lock = threading.Lock()


def cases_at(
    session: Session, problem: Problem, version: int, course_id: int | None = None
) -> tuple[TestCase, ...]:
    """Exactly the cases of ``version`` for a course's submissions (``course_id``) or for the
    others (None: the catalog's only): stored rows remember when they were added and removed."""
    # Versions count per database: the URL keeps two databases in one process apart.
    key = (session.get_bind().engine.url, problem.id, version, course_id)
    with _lock:
        cached = _cache.get(key)
    if cached is not None and cached[0] is problem:
        return cached[1]
    rows = CaseRepository(session).at_version(problem.id, version, course_id)
    cases = problem.examples + problem.hidden + tuple(to_test_case(row) for row in rows)
    with _lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (problem, cases)
    return cases


def grading_set(
    sessions: sessionmaker[Session], problem: Problem, course_id: int | None = None
) -> tuple[int, tuple[TestCase, ...]]:
    """(current version, its cases for the scope)."""
    with sessions() as session:
        version = CaseRepository(session).version(problem.id)
        return version, cases_at(session, problem, version, course_id)


def examples_set(
    sessions: sessionmaker[Session], problem: Problem, course_id: int | None = None
) -> tuple[int, tuple[TestCase, ...]]:
    """(current version, its public cases): the folder's examples and the stored public cases
    of the scope, so a student can try every case whose inputs they are shown."""
    version, cases = grading_set(sessions, problem, course_id)
    return version, tuple(c for c in cases if c.visibility == "public")
