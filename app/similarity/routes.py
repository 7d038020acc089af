"""Similarity API, for the course's staff (``CourseStaff``): queue a report on an assignment
problem, read it, open one ranked pair side by side. Students and outsiders get 404, as for a
course that does not exist."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.concurrency import run_in_threadpool

from app.core.errors import error_responses
from app.courses.deps import CourseStaff
from app.similarity.deps import SimilarityServiceDep
from app.similarity.schemas import PairDetail, ReportOut

PREFIX = "/api/courses/{course_id}/assignments/{assignment_id}/problems/{problem_id}/similarity"
router = APIRouter(prefix=PREFIX, tags=["similarity"])

AssignmentId = Annotated[int, Path(ge=1, le=2**53, description="The assignment's id.")]
ProblemId = Annotated[str, Path(max_length=128, description="The problem's id.")]
_ERRORS = error_responses({404: "Unknown course, assignment or problem of the assignment"})


@router.post("", status_code=202, response_model=ReportOut, responses=_ERRORS)
async def request_report(
    access: CourseStaff,
    assignment_id: AssignmentId,
    problem_id: ProblemId,
    service: SimilarityServiceDep,
) -> ReportOut:
    """Queue the report (again, over the last one); it is computed in the background: read it
    with GET until ``status`` is ``done``."""
    return await run_in_threadpool(
        service.request, access.course_id, assignment_id, problem_id, access.principal
    )


@router.get("", response_model=ReportOut, responses=_ERRORS)
async def report(
    access: CourseStaff,
    assignment_id: AssignmentId,
    problem_id: ProblemId,
    service: SimilarityServiceDep,
) -> ReportOut:
    """Pairs of students' latest graded attempts, ranked by evidence: shared distinctive code,
    the same rare diagnoses, the same failures on the same cases. Evidence, not a verdict."""
    return await run_in_threadpool(
        service.report, access.course_id, assignment_id, problem_id, access.principal
    )


@router.get(
    "/pairs/{rank}",
    response_model=PairDetail,
    responses=error_responses(
        {
            404: "Unknown course, assignment, problem or pair",
            409: "The report is not computed (yet): its status is not done",
        }
    ),
)
async def pair(
    access: CourseStaff,
    assignment_id: AssignmentId,
    problem_id: ProblemId,
    rank: Annotated[int, Path(ge=1, le=1000, description="The pair's rank in the report.")],
    service: SimilarityServiceDep,
) -> PairDetail:
    """Both submissions' code and the line ranges they share."""
    return await run_in_threadpool(
        service.pair, access.course_id, assignment_id, problem_id, rank, access.principal
    )
