"""``GET /api/problems/{id}/diagnosability`` and ``GET /api/problems/{id}/stats``.

Both need an instructor token: the first describes what the hidden cases catch, the second how
a class is doing. A course's staff get the diagnosability of the set their course grades with
(the catalog's cases and the course's own) at
``GET /api/courses/{course_id}/problems/{id}/diagnosability``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BeforeValidator
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Instructor
from app.core.deps import SessionsDep
from app.core.errors import ApiError, error_responses
from app.courses.deps import CourseStaff
from app.problems.deps import ProblemDep
from app.problems.loader import Problem
from app.reports.diagnosability import DiagnosabilityReport, cached_report
from app.reports.stats import ProblemStats, problem_stats
from app.testcases.current import grading_set

router = APIRouter(prefix="/api/problems/{problem_id}", tags=["instructors"])
course_router = APIRouter(
    prefix="/api/courses/{course_id}/problems/{problem_id}", tags=["instructors"]
)

_ERRORS = error_responses({404: "Unknown problem", 422: "Invalid query"})


MaxFaults = Annotated[
    int,
    Query(
        ge=1,
        le=4,
        description="Largest combination of faults considered, at most the problem's own "
        "search (the report's max_faults).",
    ),
]


@router.get("/diagnosability", response_model=DiagnosabilityReport, responses=_ERRORS)
async def diagnosability(
    instructor: Instructor, problem: ProblemDep, sessions: SessionsDep, max_faults: MaxFaults = 2
) -> DiagnosabilityReport:
    """For the current cases of the catalog plus the probes: which faults the cases catch, and
    which fault combinations the cases, and the cases with the probes, can tell apart."""
    return await _diagnosability(problem, sessions, max_faults, None)


@course_router.get("/diagnosability", response_model=DiagnosabilityReport, responses=_ERRORS)
async def course_diagnosability(
    access: CourseStaff, problem: ProblemDep, sessions: SessionsDep, max_faults: MaxFaults = 2
) -> DiagnosabilityReport:
    """The same report for the set the course's assignments are graded on: the catalog's cases
    and the course's own."""
    return await _diagnosability(problem, sessions, max_faults, access.course_id)


async def _diagnosability(
    problem: Problem, sessions: sessionmaker[Session], max_faults: int, course_id: int | None
) -> DiagnosabilityReport:
    diagnostics = problem.diagnostics
    if diagnostics is None:
        raise ApiError(404, "no_error_model", "this problem has no error model", "problem_id")
    # Past the grader's own search the report is the grader's: ``max_faults`` in it says which.
    max_faults = min(max_faults, diagnostics.error_model.diagnosis.max_faults)
    version, cases = await run_in_threadpool(grading_set, sessions, problem, course_id)
    return await run_in_threadpool(cached_report, problem, version, cases, max_faults)


_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?")


def _date_time(value: object) -> object:
    """Only what the document's ``date-time`` says (the zone may be left out): pydantic alone
    would also read a number as a Unix time."""
    if isinstance(value, str) and not _DATE_TIME.fullmatch(value):
        raise ValueError("expected a date-time such as 2026-11-01T00:00:00Z")
    return value


DateTime = Annotated[datetime, BeforeValidator(_date_time)]


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:  # 0001-01-01 east of UTC, or 9999-12-31 west of it: the ends of time
        return (datetime.min if value.year == 1 else datetime.max).replace(tzinfo=UTC)


@router.get("/stats", response_model=ProblemStats, responses=_ERRORS)
async def stats(
    instructor: Instructor,
    problem: ProblemDep,
    sessions: SessionsDep,
    since: Annotated[
        DateTime | None, Query(description="ISO 8601; without a zone, UTC. Inclusive.")
    ] = None,
    until: Annotated[
        DateTime | None, Query(description="ISO 8601; without a zone, UTC. Exclusive.")
    ] = None,
) -> ProblemStats:
    """Submissions, acceptance rate and diagnosis codes found, for submissions created in
    ``[since, until)`` (both optional)."""
    # An empty window (since at or after until) is answered, with nothing in it.
    start, end = _utc(since), _utc(until)

    def read() -> ProblemStats:
        with sessions() as session:
            return problem_stats(session, problem.id, start, end)

    return await run_in_threadpool(read)
