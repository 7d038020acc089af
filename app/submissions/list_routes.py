"""Instructors: the list of practice submissions, filtered, and "regrade all matching"."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Instructor
from app.core.errors import error_responses
from app.submissions.bulk import RegradeMatchingOut, regrade_matching_in
from app.submissions.deps import SubmissionServiceDep
from app.submissions.listing import (
    CURSOR_PATTERN,
    MAX_PAGE,
    SubmissionFilters,
    SubmissionPage,
    list_submissions,
    practice,
)

router = APIRouter(tags=["instructors"])

Filters = Annotated[SubmissionFilters, Query()]
_INVALID = {422: "A filter or the cursor is invalid"}


@router.get(
    "/api/submissions",
    response_model=SubmissionPage,
    responses=error_responses(_INVALID),
)
async def list_practice_submissions(
    instructor: Instructor,
    service: SubmissionServiceDep,
    filters: Filters,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=60, pattern=CURSOR_PATTERN)] = None,
) -> SubmissionPage:
    """Practice submissions (outside assignments; a course's are in its gradebook), newest
    first, of every account and anonymous practice. Deployment instructors and admins."""

    def read() -> SubmissionPage:
        with service.sessions() as session:
            return list_submissions(
                session,
                filters,
                limit,
                cursor,
                practice(),
                lambda row: service.listed(row, instructor),
            )

    return await run_in_threadpool(read)


# Not /api/submissions/regrade: that path already names one submission (GET /api/submissions/{id}).
@router.post(
    "/api/regrades",
    status_code=202,
    response_model=RegradeMatchingOut,
    responses=error_responses(
        {422: "A filter is invalid, or more submissions match than GRADER_REGRADE_MATCHING_MAX"}
    ),
)
async def regrade_matching(
    instructor: Instructor, service: SubmissionServiceDep, filters: Filters
) -> RegradeMatchingOut:
    """Every practice submission matching the filters (as the list takes them) graded again
    on the current test set, each like ``POST /api/submissions/{id}/regrade``: through the fair
    queue, behind new submissions, and stopped by a full queue (``queue_full``)."""
    return await run_in_threadpool(regrade_matching_in, service, filters, practice())
