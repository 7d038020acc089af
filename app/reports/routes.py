"""``GET /api/problems/{id}/diagnosability`` and ``GET /api/problems/{id}/stats``.

Both need an instructor token: the first describes what the hidden cases catch, the second how
a class is doing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Instructor
from app.core.deps import SessionsDep
from app.core.errors import ApiError, error_responses
from app.problems.deps import ProblemDep
from app.reports.diagnosability import DiagnosabilityReport, cached_report
from app.reports.stats import ProblemStats, problem_stats
from app.testcases.current import grading_set

router = APIRouter(prefix="/api/problems/{problem_id}", tags=["instructors"])

_ERRORS = error_responses({404: "Unknown problem", 422: "Invalid query"})


@router.get("/diagnosability", response_model=DiagnosabilityReport, responses=_ERRORS)
async def diagnosability(
    instructor: Instructor,
    problem: ProblemDep,
    sessions: SessionsDep,
    max_faults: Annotated[
        int, Query(ge=1, le=4, description="Largest combination of faults considered.")
    ] = 2,
) -> DiagnosabilityReport:
    """For the current cases plus the probes: which faults the cases catch, and which fault
    combinations the cases, and the cases with the probes, can tell apart."""
    diagnostics = problem.diagnostics
    if diagnostics is None:
        raise ApiError(404, "no_error_model", "this problem has no error model", "problem_id")
    limit = diagnostics.error_model.diagnosis.max_faults
    if max_faults > limit:
        raise ApiError(
            422, "invalid_request", f"the grader searches at most {limit} faults", "max_faults"
        )
    version, cases = await run_in_threadpool(grading_set, sessions, problem)
    return await run_in_threadpool(cached_report, problem, version, cases, max_faults)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01 with a positive offset
        raise ApiError(422, "invalid_request", "date out of range", "since/until") from None


@router.get("/stats", response_model=ProblemStats, responses=_ERRORS)
async def stats(
    instructor: Instructor,
    problem: ProblemDep,
    sessions: SessionsDep,
    since: Annotated[
        datetime | None, Query(description="ISO 8601; without a zone, UTC. Inclusive.")
    ] = None,
    until: Annotated[
        datetime | None, Query(description="ISO 8601; without a zone, UTC. Exclusive.")
    ] = None,
) -> ProblemStats:
    """Submissions, acceptance rate and diagnosis codes found, for submissions created in
    ``[since, until)`` (both optional)."""
    start, end = _utc(since), _utc(until)
    if start is not None and end is not None and start >= end:
        raise ApiError(422, "invalid_request", "since must be before until", "since")

    def read() -> ProblemStats:
        with sessions() as session:
            return problem_stats(session, problem.id, start, end)

    return await run_in_threadpool(read)
