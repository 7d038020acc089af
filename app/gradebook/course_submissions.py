"""A course's submissions for its staff: the instructors' submissions list (filters, pages,
regrade all matching) scoped to the work handed in for the course's assignments, and the
regrade of one submission, by the course that owns it (app.courses.tenancy.may_regrade)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from sqlalchemy import ColumnElement, select
from starlette.concurrency import run_in_threadpool

from app.assignments.models import Assignment
from app.auth.deps import CurrentUser
from app.auth.tokens import Principal
from app.core.errors import error_responses
from app.courses.deps import CourseInstructor, CourseStaff
from app.courses.tenancy import may_regrade
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
from app.submissions.schemas import RegradeAccepted
from app.submissions.service import SubmissionService, not_found

router = APIRouter(prefix="/api/courses/{course_id}/submissions", tags=["gradebook"])
one_router = APIRouter(tags=["instructors"])

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


def _check_regrade(service: SubmissionService, principal: Principal, submission_id: str) -> None:
    """404 for a submission the caller may not regrade, as for one that does not exist: its
    id tells a caller from another course nothing."""
    with service.sessions() as session:
        row = session.get(Submission, submission_id)
        if row is None:
            raise not_found(submission_id)
        course_id = None
        if row.assignment_id is not None:
            course_id = session.scalar(
                select(Assignment.course_id).where(Assignment.id == row.assignment_id)
            )
        if not may_regrade(session, principal, course_id):
            raise not_found(submission_id)


@one_router.post(
    "/api/submissions/{submission_id}/regrade",
    status_code=202,
    response_model=RegradeAccepted,
    responses=error_responses(
        {
            404: "Unknown submission, or not the caller's to regrade",
            409: "Still queued or running",
            503: "Queue full: GRADER_QUEUE_MAX submissions are queued or running",
        },
        retry_after=(503,),
    ),
)
async def regrade_submission(
    principal: CurrentUser,
    submission_id: str,
    service: SubmissionServiceDep,
    response: Response,
) -> RegradeAccepted:
    """Queue a finished submission for grading again on the problem's current test set. Work
    in an assignment: the instructors of its course and admins; practice: deployment
    instructors and admins. It takes a place in the queue like a new submission, so it is
    refused with 503 ``queue_full`` under the same cap; the previous result stays in its
    history."""
    await run_in_threadpool(_check_regrade, service, principal, submission_id)
    run = await run_in_threadpool(service.regrade, submission_id)
    response.headers["Location"] = f"/api/submissions/{submission_id}"
    return RegradeAccepted(id=submission_id, status="queued", run=run)
