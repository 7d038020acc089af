"""A course's submissions for its staff: the instructors' submissions list (filters, pages,
regrade all matching) scoped to the work handed in for the course's assignments."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import ColumnElement, select
from starlette.concurrency import run_in_threadpool

from app.assignments.models import Assignment
from app.core.errors import error_responses
from app.courses.deps import CourseInstructor, CourseStaff
from app.submissions.bulk import RegradeMatchingOut, regrade_matching_in
from app.submissions.deps import SubmissionServiceDep
from app.submissions.listing import (
    CURSOR_PATTERN,
    MAX_PAGE,
    SubmissionFilters,
    SubmissionPage,
    list_submissions,
)
from app.submissions.models import Submission

router = APIRouter(prefix="/api/courses/{course_id}/submissions", tags=["gradebook"])

Filters = Annotated[SubmissionFilters, Query()]


def in_course(course_id: int) -> ColumnElement[bool]:
    assignments = select(Assignment.id).where(Assignment.course_id == course_id)
    return Submission.assignment_id.in_(assignments.scalar_subquery())


@router.get(
    "",
    response_model=SubmissionPage,
    responses=error_responses({404: "Unknown course", 422: "A filter or the cursor is invalid"}),
)
async def course_submissions(
    access: CourseStaff,
    service: SubmissionServiceDep,
    filters: Filters,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=60, pattern=CURSOR_PATTERN)] = None,
) -> SubmissionPage:
    """The course's submissions (its assignments' attempts and example runs), newest first,
    filtered as ``GET /api/submissions``. The course's staff (TAs, instructors) and admins."""

    def read() -> SubmissionPage:
        with service.sessions() as session:
            return list_submissions(
                session,
                filters,
                limit,
                cursor,
                in_course(access.course_id),
                lambda row: service.listed(row, access.principal),
            )

    return await run_in_threadpool(read)


@router.post(
    "/regrade",
    status_code=202,
    response_model=RegradeMatchingOut,
    responses=error_responses(
        {
            404: "Unknown course",
            422: "A filter is invalid, or more submissions match than GRADER_REGRADE_MATCHING_MAX",
        }
    ),
)
async def regrade_course_submissions(
    access: CourseInstructor, service: SubmissionServiceDep, filters: Filters
) -> RegradeMatchingOut:
    """Every matching submission of the course graded again, as ``POST
    /api/regrades`` does. The course's instructors and admins, as for an
    assignment's regrade."""
    return await run_in_threadpool(
        regrade_matching_in, service, filters, in_course(access.course_id)
    )
